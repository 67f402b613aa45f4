"""The hub <-> node protocol's shared parts: header names, poll cursors and monitor shards.

Both sides import this module, so the hub and its nodes can never disagree on a header's
name or on which shard a source key belongs to. The protocol's headers are read through
the schemas here; its bodies, the subscriber spec first, are in `node_schemas`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from marshmallow import Schema, ValidationError, fields

ASSIGNED_HEADER = "X-Blackwidow-Assigned"  # on a poll: the crawler ids still wanted there
GENERATION_HEADER = "X-Blackwidow-Generation"  # on every call: the node's registration
SINCE_HEADER = "X-Blackwidow-Since"  # on a poll: the cursor of the last answer the hub applied
SHARD_HEADER = "X-Blackwidow-Shard"  # on every call: "s/k", the monitor shard calling
EPOCH_HEADER = "X-Blackwidow-Epoch"  # on every call: the calling leader's lock epoch
RENEWAL_HEADER = "X-Blackwidow-Renewal"  # on a poll: renews the node's leases (see Renewal)
# A node restarted at its address replays the runs its run ledger recorded within this
# many seconds; the hub keeps a run's row twice as long after its count last grew, so a
# replayed run always finds its row and adds only what the hub had not heard.
REPLAY_WINDOW = 6 * 3600.0


class ProtocolError(ValueError):
    """A header the other side sent is malformed; str() says why."""


def whole_number(text: str) -> bool:
    """ASCII digits only: int() refuses some of what str.isdigit() takes ("\xb2")."""
    return text.isascii() and text.isdigit()


@dataclass(frozen=True)
class Shard:
    """Monitor shard `index` of `count`: the crawlers whose source keys hash to it."""

    index: int = 0
    count: int = 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, source_key: str) -> bool:
        return self.count == 1 or shard_of(source_key, self.count) == self.index

    @classmethod
    def parse(cls, text: str | None) -> Shard:
        """From a header; absent means the one shard of an unsharded monitor."""
        if not text:
            return cls()
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            raise ProtocolError("expected a shard as INDEX/COUNT") from None
        if not 0 <= index < count <= 1024:
            raise ProtocolError("expected 0 <= INDEX < COUNT <= 1024")
        return cls(index, count)


ALL = Shard()


@functools.lru_cache(maxsize=1 << 16)  # a node asks for each of its keys at every sharded poll
def shard_of(source_key: str, shards: int) -> int:
    """The monitor shard of a source key: equal keys share a shard, so they keep sharing a
    data source. Salted, so shards do not line up with modulo routing's choice of node."""
    digest = hashlib.sha1(f"shard/{source_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


@dataclass(frozen=True)
class Cursor:
    """Where a poller's last applied answer left off: the node's report stream and its number."""

    stream: str
    seq: int

    def __str__(self) -> str:
        return f"{self.stream}:{self.seq}"

    @classmethod
    def parse(cls, text: str | None) -> Cursor | None:
        if not text:
            return None
        stream, _, seq = text.rpartition(":")
        if not stream or not whole_number(seq):
            raise ProtocolError("expected a cursor as STREAM:SEQ")
        return cls(stream, int(seq))


@dataclass(frozen=True)
class Renewal:
    """What renews a node's quota leases: the token of the node's last poll answer the hub
    received, echoed back, and for how long from that answer the leases stay in force.

    The node's answer came before the hub received it, so a node that counts `lease_after`
    from the answer named here stops storing no later than the hub, counting from receipt,
    expects; neither needs the other's clock.
    """

    token: str
    lease_after: float

    def __str__(self) -> str:
        return f"{self.lease_after!r} {self.token}"

    @classmethod
    def parse(cls, text: str | None) -> Renewal | None:
        if not text:
            return None
        seconds, _, token = text.strip().partition(" ")
        try:
            lease_after = float(seconds)
        except ValueError:
            raise ProtocolError("expected a renewal as SECONDS TOKEN") from None
        if not token or not 0 < lease_after < 86_400:
            raise ProtocolError("expected a renewal as SECONDS TOKEN, 0 < SECONDS < 86400")
        return cls(token, lease_after)


def crawler_ids(text: str | None) -> list[int] | None:
    """The crawler ids a poll names as still wanted (None: it names none, and confirms every
    subscriber of its shard; an empty header names no crawler at all)."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ProtocolError("not a list of crawler ids") from None


def generation(text: str | None) -> int:
    try:
        return int(text or "")
    except ValueError:
        raise ProtocolError("a generation number is required") from None


def epoch(text: str | None) -> int | None:
    if text is None:
        return None
    if not whole_number(text):
        raise ProtocolError("an epoch is a whole number")
    return int(text)


class Header(fields.String):
    """A protocol header read by its own parser above; a ProtocolError is the field's error.
    An absent optional header is passed to the parser as None, which says what that means."""

    def __init__(
        self, name: str, parse: Callable[[str | None], Any], description: str, **kwargs: Any
    ) -> None:
        if not kwargs.get("required"):
            kwargs["load_default"] = parse(None)
        super().__init__(data_key=name, metadata={"description": description}, **kwargs)
        self._parse = parse

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            return self._parse(value)
        except ProtocolError as error:
            raise ValidationError(str(error)) from None


class CallHeaders(Schema):
    """What every call of the hub to a node carries, besides the cluster secret."""

    generation = Header(
        GENERATION_HEADER,
        generation,
        "the node's registration the call was made for (a newer one: the node drops "
        "everything and registers again; an older one: refused)",
        required=True,
        error_messages={"required": "a generation number is required"},
    )
    shard = Header(SHARD_HEADER, Shard.parse, "INDEX/COUNT: the monitor shard calling")
    epoch = Header(
        EPOCH_HEADER, epoch, "the calling leader's lock epoch (refused once a newer one called)"
    )


class PollHeaders(CallHeaders):
    """A poll's own headers besides every call's."""

    since = Header(
        SINCE_HEADER, Cursor.parse, "STREAM:SEQ, the cursor of the last answer the hub applied"
    )
    assigned = Header(
        ASSIGNED_HEADER, crawler_ids, "comma-separated crawler ids the hub still wants here"
    )
    renewal = Header(
        RENEWAL_HEADER, Renewal.parse, "SECONDS TOKEN: renews the leases of the named answer"
    )
