"""One filtered-stream connection of an X app: tweepy's StreamingClient, telling its data source
(sources.twitter.stream) what happens on it, and how long to wait when it ends.

tweepy owns the connection and its documented reconnects after network trouble; a refused
connection (429, 401, ...) ends its loop here instead, so the source can wait interruptibly.
tweepy tells the status of a refusal alone; a 429's body says whether it is a rate limit or
the app's one connection taken (TooManyConnections), so that is read here, bounded.
"""

from __future__ import annotations

import json
import logging
import random
import time
from typing import Any, Protocol

import requests
import tweepy

from sources.fetch.fetcher import GuardedFetcher
from sources.reconnect import ReconnectPolicy, describe_http_error, short_error
from sources.twitter import client as twitter_client

log = logging.getLogger(__name__)

TOO_MANY_CONNECTIONS = "TooManyConnections"
PROBLEM_BYTES = 4096  # an X problem is a few hundred bytes; never read more of a refusal


def connection_issue(body: bytes) -> str | None:
    """The `connection_issue` of an X problem (`TooManyConnections`), or None."""
    try:
        problem = json.loads(body)
    except ValueError:
        return None
    issue = problem.get("connection_issue") if isinstance(problem, dict) else None
    return issue if isinstance(issue, str) else None


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
        self.refused_for: str | None = None  # X's connection_issue, when it gave one
        self.session.hooks["response"].append(self._read_problem)

    def _read_problem(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        """Before tweepy sees a 429, keep why X refused it."""
        if response.status_code == 429:
            body = response.raw.read(PROBLEM_BYTES, decode_content=True)
            self.refused_for = connection_issue(body)

    def next_wait(self, policy: ReconnectPolicy) -> tuple[float, str]:
        """After this connection ended (not by our hang-up): how long to wait before the next,
        as `policy` says for why it ended, and the words for the crawlers."""
        status = self.refused_with
        if status is None:  # tweepy gave up on an unexpected error
            wait = policy.after_network_error()
            return wait, f"stream failed; reconnecting in {wait:g}s"
        if status == 429 and self.refused_for == TOO_MANY_CONNECTIONS:
            wait = policy.after_too_many_connections(time.monotonic(), random.random())
            taken = f"X counts another connection of this app ({TOO_MANY_CONNECTIONS})"
            return wait, f"{taken}; retrying in {wait:g}s"
        wait = policy.after_http_error(status)
        return wait, describe_http_error("X", status, wait)

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
