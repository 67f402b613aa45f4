"""One filtered-stream connection of an X app: tweepy's StreamingClient, telling its data source
what happens on it. The source decides what to do about it (sources.twitter_stream).

tweepy owns the connection and its documented reconnects after network trouble; a refused
connection (429, 401, ...) ends its loop here instead, so the source can wait interruptibly.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import tweepy

from sources import twitter_client
from sources.fetcher import GuardedFetcher
from sources.reconnect import short_error

log = logging.getLogger(__name__)


class StreamOwner(Protocol):
    """What a connection reports to: the data source holding it."""

    key: str

    def connected(self) -> None: ...

    def received(self, response: tweepy.StreamResponse) -> None: ...

    def lost(self, message: str) -> None: ...


class Connection(tweepy.StreamingClient):
    """tweepy's stream, reporting what happens on it to the source."""

    def __init__(
        self, owner: StreamOwner, credential: dict[str, Any], fetcher: GuardedFetcher
    ) -> None:
        super().__init__(credential["bearer_token"], daemon=True)
        twitter_client.route(self.session, credential, fetcher)
        self._owner = owner
        self.refused_with: int | None = None

    def on_connect(self) -> None:
        self._owner.connected()

    def on_response(self, response: tweepy.StreamResponse) -> None:
        self._owner.received(response)

    def on_request_error(self, status_code: int) -> None:
        self.refused_with = status_code
        self.disconnect()  # the source waits, not tweepy's uninterruptible sleep

    def on_connection_error(self) -> None:
        self._owner.lost("stream connection lost; reconnecting")

    def on_closed(self, response: Any) -> None:
        self._owner.lost("X closed the stream; reconnecting")

    def on_errors(self, errors: Any) -> None:
        log.warning("stream sent errors key=%s errors=%s", self._owner.key, errors)

    def on_exception(self, exception: Exception) -> None:
        log.error("stream failed key=%s error=%s", self._owner.key, short_error(exception))
