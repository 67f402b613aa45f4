"""The shared vocabulary of crawling: items, subscriber specs and the data-source protocol.

Nothing here does I/O; the hub, the nodes and every source type speak these types.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

# A crawler's priority, by name, and the weight a node's fetch scheduler gives it.
PRIORITIES: dict[str, int] = {"low": 1, "normal": 2, "high": 4}
DEFAULT_PRIORITY = "normal"


def utc_text(moment: datetime) -> str:
    """Fixed-width ISO-8601 in UTC, so text order is time order; naive instants are UTC."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.isoformat(timespec="microseconds")


def parse_utc(value: Any) -> datetime | None:
    """An API's ISO-8601 time (`...Z` included) as an aware instant; naive ones are UTC, and
    anything else is no time at all."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Item:
    """One crawled record. A data source emits items with no crawler; a subscriber claims them."""

    id: str
    source: str
    url: str | None
    title: str | None
    text: str | None
    author: str | None
    published_at: datetime | None
    fetched_at: datetime
    conversation_id: str | None = None
    in_reply_to: str | None = None
    crawler_id: int | None = None
    html: str | None = None  # the entry's content as published, sanitised; None where it has none

    def for_crawler(self, crawler_id: int) -> Item:
        return dataclasses.replace(self, crawler_id=crawler_id)


@dataclass(frozen=True)
class SubscriberSpec:
    """What the hub pushes to a node for one crawler (`PUT /subscribers/<crawler id>`). A node
    reads one only through `blackwidow.core.node_schemas.SubscriberSpecSchema`, which checks it.

    `lease` is the user-budget ceiling: the crawler's total stored items may not exceed it
    (None when the user has no limit). `item_limit` is the crawler's own ceiling.
    `retention_days` is how long its items are kept (None: for ever).
    `credential` is the secret of a credential the user stored on the hub, when the query
    names one; None means the node's own credential of that name. It never reaches a repr.
    `priority` orders the crawler's fetches against others when a node is overloaded.
    `recollect_after` is the length of its time segments in seconds (sources.segments): an
    item may be collected again, as a new version, once its segment has passed (None: never).
    `schedule` (sources.timetable) sets when its data source polls; None: the node's interval.
    It is not part of the source key: crawlers fetching the same thing share one source
    whatever their schedules, which polls at the earliest tick among them.
    """

    crawler_id: int
    user_id: int
    source: str
    query: dict[str, Any]
    item_limit: int | None = None
    lease: int | None = None
    retention_days: int | None = None
    credential: dict[str, Any] | None = field(default=None, repr=False)
    priority: str = DEFAULT_PRIORITY
    recollect_after: int | None = None
    schedule: dict[str, Any] | None = None

    @property
    def ceiling(self) -> int | None:
        """The lower of the crawler's own limit and its lease; None means unbounded."""
        bounds = [b for b in (self.item_limit, self.lease) if b is not None]
        return min(bounds) if bounds else None

    @property
    def credential_owner(self) -> int | None:
        """The user whose stored credential this spec carries (part of its source key)."""
        return self.user_id if self.credential is not None else None

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON data. Shallow: the query is shared, not copied (a hub computes
        this for every crawler it places, and never changes the result)."""
        data = {name: getattr(self, name) for name in _SPEC_FIELDS}
        # absent rather than a default value: digests of specs made before the field stay valid
        if data["credential"] is None:
            del data["credential"]
        if data["priority"] == DEFAULT_PRIORITY:
            del data["priority"]
        if data["recollect_after"] is None:
            del data["recollect_after"]
        if data["schedule"] is None:
            del data["schedule"]
        return data

    def digest(self) -> str:
        """Stable fingerprint: equal specs give equal digests in every process."""
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha1(canonical.encode()).hexdigest()


_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(SubscriberSpec))


class SourceSink(Protocol):
    """Where a data source sends what it finds; the pool fans items out to subscribers.

    `to` names the crawlers the items or the error are for (a stream routing by rule
    tags); None means every subscriber of the source. `failing` says the whole source gets
    nothing (every feed fails), which its crawlers show as their state.
    """

    def deliver(self, items: Sequence[Item], to: Collection[int] | None = None) -> None: ...

    def report_error(
        self, message: str | None, to: Collection[int] | None = None, failing: bool = False
    ) -> None: ...


@runtime_checkable
class ReportsFeeds(Protocol):
    """A data source made of feeds, each with a health of its own to show."""

    def feeds(self) -> list[dict[str, Any]]: ...


class DataSource(Protocol):
    """One fetcher or stream on a node, shared by every subscriber with the same source key.

    The pool calls `start` when the first subscriber attaches and `stop` when the last
    one leaves; `attach` and `detach` tell it of every subscriber that joins, changes or
    leaves in between (a stream turns their terms into rules). None of these may block
    on the network: a source does its I/O on its own threads, and `stop` returns at once,
    leaving those threads to finish what the provider must still be told (a stream's rules
    deleted). `snapshot` returns what the source currently knows, so a subscriber that
    attaches late still sees the items the source fetched before it came.
    """

    key: str

    def start(self, sink: SourceSink) -> None: ...

    def stop(self) -> None: ...

    def attach(self, spec: SubscriberSpec) -> None: ...

    def detach(self, crawler_id: int) -> None: ...

    def snapshot(self) -> list[Item]: ...
