"""RSS/Atom data source: polls a set of feeds through the guarded fetcher and delivers new entries.

Each feed is one entry of the node's fetch scheduler (sources.fetch.scheduler), added on start and
withdrawn on stop; the source keeps what it knows of each feed between polls and decides,
with sources.fetch.polled, when it is next due: at the earliest tick of its subscribers' schedules
(sources.fetch.scheduled_entries), or later when the server or a failure asks. Keywords are not its
business: each subscriber filters what the shared source delivers. Turning a fetched
document into items is sources.rss.parse's job, run in the node's worker processes when it has
them (sources.rss.parse_job).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from sources.fetch.fetcher import FetchError, FetchResult, GuardedFetcher
from sources.fetch.polled import PollState
from sources.fetch.scheduled_entries import ScheduledEntries
from sources.fetch.scheduler import FetchScheduler, NextPoll
from sources.fetch.workers import WorkerProcesses
from sources.model import Item, SourceSink, SubscriberSpec
from sources.rss.parse import FeedError, parse_feed
from sources.rss.parse_job import parse_elsewhere
from sources.url_keys import UrlKeys
from sources.urls import canonical_url

log = logging.getLogger(__name__)


@dataclass(eq=False)  # compared by identity: each feed of each source is its own schedule entry
class _Feed(PollState):
    """What the source remembers about one feed between polls."""

    entries: int | None = None  # entries in the last document parsed
    title: str | None = None  # the feed's own, from the last document parsed
    ttl: float | None = None
    items: list[Item] = field(default_factory=list)
    delivered_ids: set[str] = field(default_factory=set)
    delivered_digest: bytes | None = None  # of the last document whose items were delivered

    def health(self, now: float, now_at: datetime) -> dict[str, Any]:
        return {**super().health(now, now_at), "entries": self.entries, "title": self.title}


class RssSource:
    """One set of feeds shared by every subscriber whose query names the same feeds."""

    def __init__(
        self,
        key: str,
        query: dict[str, Any],
        fetcher: GuardedFetcher,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        scheduler: FetchScheduler | None = None,
        epoch_offset: float | None = None,
        workers: WorkerProcesses | None = None,
    ) -> None:
        self.key = key
        self._fetcher = fetcher
        self._workers = workers  # None: documents are parsed in this process
        self._interval = interval
        self._clock = clock
        # Canonical URLs, as in the source key: two spellings of one feed are fetched once.
        self._feeds = [_Feed(url) for url in dict.fromkeys(map(canonical_url, query["feeds"]))]
        self._url_keys = UrlKeys.of(query)  # part of the source key: one set of rules here
        self._sink: SourceSink | None = None
        self._round_lock = threading.Lock()  # poll_due: one round at a time
        self._items_lock = threading.Lock()  # snapshot() runs on other threads
        name = f"rss-source-{key}"
        self._entries = ScheduledEntries(
            scheduler, name, interval, self._replanned, clock, epoch_offset
        )
        self._reported: tuple[str | None, bool] | None = None  # the last error report, if any

    def start(self, sink: SourceSink) -> None:
        """Schedule every feed, due now, delivering to `sink` until stop()."""
        if not self._entries.stopped:
            return
        self._sink = sink
        self._entries.start(
            {
                feed: (urlsplit(feed.url).hostname or "", partial(self._scheduled_poll, feed, sink))
                for feed in self._feeds
            }
        )

    def stop(self) -> None:
        """Withdraw the feeds: none is fetched again. Does not wait: a fetch in flight ends by
        its own deadline, and delivers nothing."""
        self._entries.stop()

    def attach(self, spec: SubscriberSpec) -> None:
        """The feeds take the highest priority among the subscribers sharing them, and poll
        at the earliest tick among their schedules."""
        self._entries.attach(spec)

    def detach(self, crawler_id: int) -> None:
        self._entries.detach(crawler_id)

    def feeds(self) -> list[dict[str, Any]]:
        """Each feed's health: last fetch and status, last success, error streak, next due."""
        now, now_at = self._clock(), datetime.now(UTC)
        return [feed.health(now, now_at) for feed in self._feeds]

    def snapshot(self) -> list[Item]:
        """The items of the latest successful parse of every feed."""
        with self._items_lock:
            return [item for feed in self._feeds for item in feed.items]

    def poll_due(self, sink: SourceSink | None = None) -> None:
        """One synchronous round, without the scheduler: fetch every feed that is due on this
        source's clock, deliver new items, report errors once.

        `sink` defaults to the one given to start(); passing one lets a caller (a test, say)
        drive rounds by hand.
        """
        sink = sink or self._sink
        if sink is None:
            raise RuntimeError("no sink: call start() first or pass one")
        with self._round_lock:
            now = self._clock()
            polled = [
                self._poll(feed, sink, now) for feed in self._feeds if feed.next_poll_at <= now
            ]
            if polled:
                sink.report_error(self._errors(), failing=self._failing())

    def _scheduled_poll(self, feed: _Feed, sink: SourceSink, now: float) -> NextPoll:
        """The scheduler's job for one feed: poll it, report, say when it is next due."""
        if self._entries.stopped:  # no request, and the entry is gone already
            return NextPoll(now)
        self._poll(feed, sink, now)
        report = (self._errors(), self._failing())
        if not self._entries.stopped and report != self._reported:
            # only a change is news: subscribers that join later are told by the pool
            self._reported = report
            sink.report_error(report[0], failing=report[1])
        return NextPoll(feed.next_poll_at, retry=feed.failures > 0)

    def _errors(self) -> str | None:
        return "; ".join(f"{feed.url}: {feed.error}" for feed in self._feeds if feed.error) or None

    def _failing(self) -> bool:
        """Every feed failed its last fetch: the source gets nothing at all."""
        return all(feed.error for feed in self._feeds)

    def _poll(self, feed: _Feed, sink: SourceSink, now: float) -> None:
        """Fetch, parse and deliver one feed; any failure becomes the feed's error and a backoff."""
        feed.began()
        try:
            self._fetch_and_deliver(feed, sink)
        except (FetchError, FeedError) as error:
            feed.failed(str(error), error)
            log.warning("feed failed url=%s reason=%s retry_after=%s", feed.url, error, feed.asked)
        except Exception as error:  # hostile input may find a parser bug; it stays this feed's
            feed.failed(f"unexpected {type(error).__name__}")
            log.exception("feed failed url=%s reason=unexpected", feed.url)
        else:
            feed.succeeded()
        feed.plan(now, self._entries.wait(now), self._interval, feed.ttl)

    def _replanned(self) -> Iterator[tuple[_Feed, float]]:
        """Subscribers came or went with schedules: each feed waiting after a good poll, due
        at the new earliest tick."""
        for feed in self._feeds:
            due_at = feed.replan(self._entries.wait, self._interval, feed.ttl)
            if due_at is not None:
                yield feed, due_at

    def _fetch_and_deliver(self, feed: _Feed, sink: SourceSink) -> None:
        result = self._fetcher.get(feed.url, feed.conditional_headers())
        fetched_at = datetime.now(UTC)
        feed.answered(result.status, result.headers, fetched_at)
        if result.status == 304:
            return
        digest = hashlib.blake2b(result.body, digest_size=16).digest()
        if digest != feed.delivered_digest:  # servers without validators resend the same bytes
            if not self._parse_and_deliver(feed, result, fetched_at, sink):
                return
            feed.delivered_digest = digest
        feed.keep_validators(result.headers)

    def _parse_and_deliver(
        self, feed: _Feed, result: FetchResult, fetched_at: datetime, sink: SourceSink
    ) -> bool:
        """Parse a changed document and deliver its new items; False when the source was
        stopped meanwhile (its subscribers are gone, and nothing is delivered)."""
        known = {item.id: item for item in feed.items}
        document = (result.body, result.url, fetched_at, result.headers, known, self._url_keys)
        if self._workers is not None:
            items, feed.ttl, feed.title = parse_elsewhere(self._workers, *document)
        else:
            with self._entries.cpu_bound():
                items, feed.ttl, feed.title = parse_feed(*document)
        feed.entries = len(items)
        with self._items_lock:
            feed.items = items
        if self._entries.withdrawn:
            return False
        self._deliver_new(feed, items, sink)
        return True

    def _deliver_new(self, feed: _Feed, items: Sequence[Item], sink: SourceSink) -> None:
        new = [item for item in items if item.id not in feed.delivered_ids]
        if new:
            sink.deliver(new)
        # Only ids still in the document are remembered, so memory follows the feed's size.
        feed.delivered_ids = {item.id for item in items}
