"""The Store protocol: where nodes write items and the hub reads them.

Every back end passes the same contract tests (tests/component/test_store_contract.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sources.model import Item


class Store(Protocol):
    def add(self, items: Sequence[Item]) -> int:
        """Upsert items keyed by (crawler_id, id); return how many were not stored before.

        Every item must carry a crawler_id. Writing the same item twice stores it once.
        """
        ...

    def items(self, crawler_id: int, limit: int) -> list[Item]:
        """A crawler's items, newest first (by fetched_at, then id), at most `limit`."""
        ...

    def count(self, crawler_id: int) -> int:
        """How many items a crawler has stored."""
        ...

    def ping(self) -> bool:
        """True when the store answers; used by health endpoints."""
        ...

    def close(self) -> None: ...
