"""RSS/Atom data source: polls a set of feeds through the guarded fetcher and delivers new entries.

Keywords are not its business: each subscriber filters what the shared source delivers.
Turning a fetched document into items is sources.rss_parse's job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sources.fetcher import FetchError, GuardedFetcher
from sources.model import Item, SourceSink, SubscriberSpec
from sources.rss_parse import FeedError, parse_feed
from sources.urls import canonical_url

log = logging.getLogger(__name__)

WAKE_INTERVAL = 0.2  # how often the thread looks for due feeds (stop() wakes it at once)
STOP_WAIT = 5.0  # stop() waits this long; a fetch still running ends on its own deadline
BACKOFF_CAP = 10  # a failing feed is retried at most this many intervals apart


@dataclass
class _Feed:
    """What the source remembers about one feed between polls."""

    url: str
    next_poll_at: float = float("-inf")
    failures: int = 0
    error: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    ttl: float | None = None
    items: list[Item] = field(default_factory=list)
    delivered_ids: set[str] = field(default_factory=set)

    def conditional_headers(self) -> dict[str, str]:
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


class RssSource:
    """One set of feeds shared by every subscriber whose query names the same feeds."""

    def __init__(
        self,
        key: str,
        query: dict[str, Any],
        fetcher: GuardedFetcher,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.key = key
        self._fetcher = fetcher
        self._interval = interval
        self._clock = clock
        # Canonical URLs, as in the source key: two spellings of one feed are fetched once.
        self._feeds = [_Feed(url) for url in dict.fromkeys(map(canonical_url, query["feeds"]))]
        self._sink: SourceSink | None = None
        self._round_lock = threading.Lock()  # one round at a time: thread or direct caller
        self._items_lock = threading.Lock()  # snapshot() runs on other threads
        self._stop_event: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self, sink: SourceSink) -> None:
        """Poll in a daemon thread, delivering to `sink`, until stop()."""
        if self._thread is not None:
            return
        self._sink = sink
        # Each thread gets its own event, so a late thread from an earlier start cannot be revived.
        self._stop_event = threading.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(sink, self._stop_event),
            name=f"rss-source-{self.key}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Signal the thread and wait a bounded time; a fetch in flight ends by its own deadline."""
        thread, stop_event = self._thread, self._stop_event
        self._thread = self._stop_event = None
        if thread is None or stop_event is None:
            return
        stop_event.set()
        thread.join(timeout=STOP_WAIT)
        if thread.is_alive():
            log.warning("rss source still finishing a fetch key=%s", self.key)

    def attach(self, spec: SubscriberSpec) -> None:
        """Nothing to do: each subscriber filters by its own keywords."""

    def detach(self, crawler_id: int) -> None:
        """Nothing to do: the feeds are the same for every subscriber."""

    def snapshot(self) -> list[Item]:
        """The items of the latest successful parse of every feed."""
        with self._items_lock:
            return [item for feed in self._feeds for item in feed.items]

    def poll_due(self, sink: SourceSink | None = None) -> None:
        """One synchronous round: fetch every feed that is due, deliver new items, report errors.

        `sink` defaults to the one given to start(); passing one lets a caller (a test, say)
        drive rounds without the thread.
        """
        sink = sink or self._sink
        if sink is None:
            raise RuntimeError("no sink: call start() first or pass one")
        self._round(sink, lambda: False)

    def _round(self, sink: SourceSink, stopping: Callable[[], bool]) -> None:
        with self._round_lock:
            now = self._clock()
            polled = 0
            for feed in self._feeds:
                if stopping():  # a stopped source makes no more requests, even mid-round
                    break
                if feed.next_poll_at <= now:
                    self._poll(feed, sink, now)
                    polled += 1
            if polled:
                errors = [f"{feed.url}: {feed.error}" for feed in self._feeds if feed.error]
                sink.report_error("; ".join(errors) or None)

    def _run(self, sink: SourceSink, stop_event: threading.Event) -> None:
        while not stop_event.is_set():
            try:
                self._round(sink, stop_event.is_set)
            except Exception:  # a bug in a sink must not end polling for every subscriber
                log.exception("rss round failed key=%s", self.key)
            stop_event.wait(WAKE_INTERVAL)

    def _poll(self, feed: _Feed, sink: SourceSink, now: float) -> None:
        """Fetch, parse and deliver one feed; any failure becomes the feed's error and a backoff."""
        try:
            self._fetch_and_deliver(feed, sink)
        except (FetchError, FeedError) as error:
            self._failed(feed, now, str(error))
            log.warning("feed failed url=%s reason=%s", feed.url, error)
        except Exception as error:  # hostile input may find a parser bug; it stays this feed's
            self._failed(feed, now, f"unexpected {type(error).__name__}")
            log.exception("feed failed url=%s reason=unexpected", feed.url)
        else:
            feed.failures, feed.error = 0, None
            feed.next_poll_at = now + max(self._interval, feed.ttl or 0.0)

    def _failed(self, feed: _Feed, now: float, reason: str) -> None:
        feed.failures += 1
        feed.error = reason
        backoff = min(2**feed.failures, BACKOFF_CAP)
        feed.next_poll_at = now + self._interval * backoff

    def _fetch_and_deliver(self, feed: _Feed, sink: SourceSink) -> None:
        result = self._fetcher.get(feed.url, feed.conditional_headers())
        if result.status == 304:
            return
        items, feed.ttl = parse_feed(result.body, result.url, datetime.now(UTC))
        with self._items_lock:
            feed.items = items
        self._deliver_new(feed, items, sink)
        # Validators are kept only once the items are delivered: a 304 must never hide
        # items that a failed delivery did not pass on.
        feed.etag = result.headers.get("ETag")
        feed.last_modified = result.headers.get("Last-Modified")

    def _deliver_new(self, feed: _Feed, items: Sequence[Item], sink: SourceSink) -> None:
        new = [item for item in items if item.id not in feed.delivered_ids]
        if new:
            sink.deliver(new)
        # Only ids still in the document are remembered, so memory follows the feed's size.
        feed.delivered_ids = {item.id for item in items}
