"""The Store protocol: where nodes write items and the hub reads them.

Every back end passes the same contract tests (tests/component/test_store_contract.py).
Instants are kept to the millisecond (Cassandra's `timestamp` precision) and read back in UTC.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from blackwidow.core.store.windows import EVERYTHING, ItemPage, Window
from sources.model import Item


class StoreUnavailable(Exception):
    """The store did not answer; the write may be retried as it is (every write is idempotent)."""


class StoreRefused(ValueError):
    """BLACKWIDOW_STORE names no store this process can open (the message names the variable
    and the cause): a start-up refusal, not an outage to wait out."""


class SearchUnsupported(Exception):
    """This store cannot search items' words (the message says why): never answered by a scan."""


@dataclass(frozen=True)
class Write:
    """One caller's write in a batch (`Store.add_many`): what it would pass to `add`."""

    items: Sequence[Item]
    ttl: int | None = None
    id_ttl: int | None = None
    unseen: Collection[tuple[int, str]] = ()


class Store(Protocol):
    # Whether add reads if each item is stored before writing it (Cassandra's items_by_id):
    # the read a node's seen-set saves. False where the write's own key check decides.
    reads_before_write: bool
    # Seconds after another writer's last write of a crawler by which `count` counts its
    # items once: Cassandra mends two writers' overlap once both were quiet that long.
    count_settles_after: float

    def add(
        self,
        items: Sequence[Item],
        ttl: int | None = None,
        id_ttl: int | None = None,
        unseen: Collection[tuple[int, str]] = (),
    ) -> list[Item]:
        """Upsert items keyed by (crawler_id, id); return the ones that were not stored before.

        Every item must carry a crawler_id. Writing the same item twice stores it once.
        `ttl` is the crawler's retention in seconds: the item is gone from reads after it.
        `id_ttl` is how long its id is listed by `stored_ids` (time segments; None: for ever).
        `unseen` are (crawler_id, id) keys the caller knows are not stored (a seen-set's
        "definitely new", spawn.seen): the store may skip reading them; wrong, it may store
        such an item twice.
        A reply whose source named only its parent is stored in its thread's root conversation,
        and replies stored before it move there too (blackwidow.core.store.threads); the items
        returned carry the conversation they were stored in.
        Raises StoreUnavailable when the store does not answer.
        """
        ...

    def add_many(self, writes: Sequence[Write]) -> list[list[Item]]:
        """Several callers' writes in one go (one transaction, or one round of requests);
        for each, in order, the items `add` would have returned had the writes been made one
        after another: an item in two writes is new to the first only, a reply joins a parent
        an earlier write stored, each write keeps its own retention.
        Raises StoreUnavailable for all of them (each is retried as after a failed `add`), and
        ValueError, storing nothing, when an item of any of them has no crawler_id.
        """
        ...

    def items(self, crawler_id: int, limit: int) -> list[Item]:
        """A crawler's items, newest first (by fetched_at, then id), at most `limit`."""
        ...

    def page(
        self, crawler_id: int, limit: int, window: Window = EVERYTHING, after: Any = None
    ) -> ItemPage:
        """The next `limit` of a crawler's items in `window`, in the order of `items`, from
        `after` (a position an earlier page gave; None for the first page).

        Pages read from where the last one ended (never an offset), so a page costs the same
        wherever it is, and items stored meanwhile never shift one into the next page twice.
        Raises BadPosition for a position this store did not give.
        """
        ...

    def stream(self, crawler_id: int, window: Window = EVERYTHING) -> Iterator[Item]:
        """Every item of a crawler in `window`, in the order of `items`, read in batches as it
        is consumed: memory stays constant whatever the count. Raises StoreUnavailable while
        iterating if the store stops answering."""
        ...

    def conversation(
        self, conversation_id: str, crawler_ids: Collection[int], limit: int
    ) -> list[Item]:
        """The items of one conversation stored for these crawlers, oldest first, at most `limit`.

        Order is by published_at (fetched_at when the item has none), then crawler, then id.
        """
        ...

    def conversation_page(
        self, conversation_id: str, crawler_ids: Collection[int], limit: int, after: Any = None
    ) -> ItemPage:
        """The next `limit` items of a conversation, in the order of `conversation`, from
        `after` as `page` reads. Raises BadPosition for a position this store did not give."""
        ...

    def search(
        self,
        words: Sequence[str],
        crawler_ids: Collection[int],
        limit: int,
        window: Window = EVERYTHING,
        after: Any = None,
    ) -> ItemPage:
        """The next `limit` items of these crawlers in `window` whose title, text or author
        hold every one of `words` (lowercase, as blackwidow.core.store.windows.words gives them),
        from `after` as `page` reads. The order is the store's own (docs/stores.md, "Search").
        Raises SearchUnsupported when the store cannot search, BadPosition for a position this
        store did not give."""
        ...

    def stored_ids(self, crawler_id: int) -> Iterator[str]:
        """The id of every item the crawler has stored whose id has not expired (`id_ttl`),
        in batches as it is consumed, for a node's seen-set to load. Raises StoreUnavailable
        while iterating if the store stops answering."""
        ...

    def count(self, crawler_id: int) -> int:
        """How many items a crawler has ever stored (expiry does not lower it: limits count),
        each once, however many writers stored it at once (once they were quiet for
        `count_settles_after`)."""
        ...

    def count_unsettled(self, crawler_id: int) -> bool:
        """Whether this instance's last `count` of the crawler held two writers' overlap that
        a count after `count_settles_after` will mend; no store call."""
        ...

    def ping(self) -> bool:
        """True when the store answers; used by health endpoints."""
        ...

    def close(self) -> None: ...
