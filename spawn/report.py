"""Change reports for the hub's polls: what changed since the cursor a poller last applied.

A poll names the cursor of the last answer the hub applied; the node answers with the
entries that changed after it and the keys that went, so a steady poll costs the changes,
not the subscribers. A poll without a usable cursor (a new leader, a restarted node, a
cursor older than what the log still remembers) gets everything, marked `full`.
Not thread-safe on its own: the caller serialises calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from blackwidow.node_protocol import Cursor


@dataclass
class Answer:
    cursor: Cursor
    full: bool
    changed: list[Any]
    removed: list[Hashable]


class ChangeLog:
    """One poller's view of a set of entries (subscriber statuses, data sources) on a node."""

    def __init__(self) -> None:
        self.stream = uuid.uuid4().hex[:16]
        self._seq = 0
        self._floor = 0  # removals at or below it are forgotten: older cursors get `full`
        self._entries: dict[Hashable, tuple[int, Any]] = {}  # key -> (changed at seq, value)
        self._removed: dict[Hashable, int] = {}  # key -> removed at seq

    def report(self, current: Mapping[Hashable, Any], since: Cursor | None) -> Answer:
        self._record(current)
        usable = (
            since is not None
            and since.stream == self.stream
            and self._floor <= since.seq <= self._seq
        )
        cursor = Cursor(self.stream, self._seq)
        if not usable:
            return Answer(cursor, True, list(current.values()), [])
        assert since is not None
        self._forget_removals_up_to(since.seq)
        return Answer(
            cursor,
            False,
            [value for at, value in self._entries.values() if at > since.seq],
            [key for key, at in self._removed.items() if at > since.seq],
        )

    def _record(self, current: Mapping[Hashable, Any]) -> None:
        """Number this report's changes with one new sequence number (none if nothing changed)."""
        seq = self._seq + 1
        changed = False
        for key, value in current.items():
            known = self._entries.get(key)
            if known is None or known[1] != value:
                self._entries[key] = (seq, value)
                self._removed.pop(key, None)
                changed = True
        for key in [key for key in self._entries if key not in current]:
            del self._entries[key]
            self._removed[key] = seq
            changed = True
        if changed:
            self._seq = seq

    def _forget_removals_up_to(self, seq: int) -> None:
        """The poller has applied everything up to `seq`: removals there need no more telling."""
        if seq > self._floor:
            self._removed = {key: at for key, at in self._removed.items() if at > seq}
            self._floor = seq
