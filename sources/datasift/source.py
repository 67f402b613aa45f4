"""The paid stream ("datasift"): a metered JSON-lines stream, one connection per distinct query.

The provider bills every item it delivers, so every crawler asking the same query of the
same credential shares this one connection. Wire format (docs/sources.md "Paid stream"):
`GET endpoint` with the query in `query_param` and the secret in `auth_header`; the answer
streams one JSON object per line, an empty line being a keep-alive.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import requests

from sources import api_session
from sources.fetch.fetcher import GuardedFetcher
from sources.model import Item, SourceSink, SubscriberSpec, parse_utc
from sources.observer import UNOBSERVED, SourceObserver
from sources.reconnect import ReconnectPolicy, describe_http_error, short_error
from sources.threaded import ThreadedSource

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 90.0  # a stream silent this long, keep-alives included, is dead
MAX_LINE = 1024 * 1024  # bytes: one item's line; a longer one is skipped, not buffered
READ_CHUNK = 64 * 1024
_TEXT_FIELDS = ("url", "title", "text", "author", "conversation_id", "in_reply_to")


class BadLine(ValueError):
    """A line that is not an item: skipped and counted, never logged (it may hold anything)."""


def bounded_lines(chunks: Iterable[bytes], limit: int) -> Iterator[bytes | None]:
    """The lines of a stream, without their line ends; None for a line longer than `limit`,
    which is dropped as it arrives, so a provider cannot make a node buffer without end."""
    held = bytearray()
    skipping = False
    for chunk in chunks:
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            if skipping:
                skipping = False
            elif len(held) + len(piece) > limit:
                yield None
            else:
                yield bytes(held + piece).rstrip(b"\r")
            held.clear()
        if skipping:
            continue
        held += rest
        if len(held) > limit:
            yield None
            held.clear()
            skipping = True
    if held and not skipping:
        yield bytes(held).rstrip(b"\r")


def parse_line(line: bytes, fetched_at: datetime) -> Item:
    """One streamed line as an item: a JSON object with a string `id`."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        raise BadLine("not JSON") from None
    item_id = data.get("id") if isinstance(data, Mapping) else None
    if not isinstance(item_id, str | int) or isinstance(item_id, bool):
        raise BadLine("no id")
    text = {name: data.get(name) for name in _TEXT_FIELDS}
    return Item(
        id=str(item_id),
        source="datasift",
        fetched_at=fetched_at,
        published_at=parse_utc(data.get("created_at")),
        **{name: value if isinstance(value, str) else None for name, value in text.items()},
    )


class PaidStreamSource(ThreadedSource):
    thread_name = "paid-stream"

    def __init__(
        self,
        key: str,
        spec: SubscriberSpec,
        credential: dict[str, Any],
        fetcher: GuardedFetcher,
        rate_limit_wait: float,
        observer: SourceObserver = UNOBSERVED,
    ) -> None:
        super().__init__(key)
        self._query = spec.query["query"]
        self._credential = credential
        self._session = api_session.guarded(requests.Session(), fetcher)
        self._policy = ReconnectPolicy(rate_limit_wait, observer, "datasift")
        self.bad_lines = 0

    def snapshot(self) -> list[Item]:
        return []  # a stream has no past to replay

    def _interrupt(self) -> None:
        api_session.hang_up(self._session)  # the query's one connection is free at once

    def _run(self, sink: SourceSink) -> None:
        while not self._stop.is_set():
            try:
                wait = self._stream(sink)
            except (requests.RequestException, OSError) as error:
                if self._stop.is_set():
                    return  # our own hang-up
                wait = self._policy.after_network_error()
                sink.report_error(f"stream connection lost ({short_error(error)}); reconnecting")
            self._stop.wait(wait)

    def _stream(self, sink: SourceSink) -> float:
        """One connection: read it until it ends; return how long to wait before the next."""
        credential = self._credential
        with self._session.get(
            credential["endpoint"],
            params={credential["query_param"]: self._query},
            headers={credential["auth_header"]: credential["auth_value"]},
            stream=True,
            allow_redirects=False,
            timeout=(CONNECT_TIMEOUT, READ_TIMEOUT),
        ) as response:
            if self._stop.is_set():  # stopped while connecting: hang_up() may have missed it
                return 0.0
            if response.status_code != 200:
                wait = self._policy.after_http_error(
                    response.status_code, _retry_after(response.headers.get("Retry-After"))
                )
                message = describe_http_error("the provider", response.status_code, wait)
                log.warning("paid stream refused key=%s reason=%s", self.key, message)
                sink.report_error(message)
                return wait
            self._policy.connected()
            sink.report_error(None)
            log.info("paid stream connected key=%s", self.key)
            for line in bounded_lines(response.iter_content(READ_CHUNK), MAX_LINE):
                if self._stop.is_set():
                    return 0.0
                if line is None:
                    self._skip(f"line longer than {MAX_LINE} bytes")
                elif line:
                    self._deliver(line, sink)
        if self._stop.is_set():
            return 0.0
        sink.report_error("the provider closed the stream; reconnecting")
        return self._policy.after_network_error()

    def _deliver(self, line: bytes, sink: SourceSink) -> None:
        try:
            item = parse_line(line, datetime.now(UTC))
        except BadLine as error:
            self._skip(str(error))
            return
        sink.deliver([item])

    def _skip(self, reason: str) -> None:
        self.bad_lines += 1
        log.warning("paid stream line skipped key=%s reason=%s", self.key, reason)


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
