"""What a node may count of its data sources' work: one small hook that sources call.

Sources own this interface, so they report without importing the node; the node passes in an
implementation (spawn.metrics) and sources never learn what becomes of the figures. Each call
is made once per fetch, delivered batch or connection, never per item, and outside any lock.
"""

from __future__ import annotations

from typing import Protocol

# A fetch ends in one of these outcomes: the status of a complete answer, or the kind of
# failure. A fixed set, so the node's figures stay bounded whatever the feeds do.
FETCH_OUTCOMES = (
    "200",
    "2xx",
    "304",
    "http_4xx",
    "http_5xx",
    "http_other",
    "refused",
    "dns",
    "invalid_url",
    "connection",
    "timeout",
    "too_large",
    "too_many_redirects",
    "bad_encoding",
)


class SourceObserver(Protocol):
    def fetched(self, outcome: str, seconds: float, size: int) -> None:
        """A guarded fetch ended: its outcome (FETCH_OUTCOMES), duration and body bytes."""

    def delivered(self, source: str, items: int) -> None:
        """A data source of this source type handed items to its subscribers."""

    def stream_connected(self, source: str) -> None:
        """A provider's stream of this source type connected."""

    def stream_lost(self, source: str) -> None:
        """A provider's stream failed or was refused; a reconnect follows."""


class Unobserved:
    """The observer of a source nobody counts (tests, tools): every call does nothing."""

    def fetched(self, outcome: str, seconds: float, size: int) -> None:
        pass

    def delivered(self, source: str, items: int) -> None:
        pass

    def stream_connected(self, source: str) -> None:
        pass

    def stream_lost(self, source: str) -> None:
        pass


UNOBSERVED = Unobserved()
