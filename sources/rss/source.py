"""RSS/Atom data source: polls a set of feeds through the guarded fetcher and delivers new entries.

Each feed is one entry of the node's fetch scheduler (sources.scheduler), added on start and
withdrawn on stop; the source keeps what it knows of each feed between polls and decides,
with sources.due, when it is next due: at the earliest tick of its subscribers' schedules
(sources.timetable), or later when the server or a failure asks. Keywords are not its
business: each subscriber filters what the shared source delivers. Turning a fetched
document into items is sources.rss.parse's job.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sources import due, timetable
from sources.fetcher import FetchError, FetchResult, GuardedFetcher, HttpStatusError
from sources.model import (
    DEFAULT_PRIORITY,
    PRIORITIES,
    Item,
    SourceSink,
    SubscriberSpec,
    utc_text,
)
from sources.rss.parse import FeedError, parse_feed
from sources.scheduler import FetchScheduler, NextPoll
from sources.urls import canonical_url

log = logging.getLogger(__name__)

_ASKS_TO_WAIT = (429, 503)  # statuses whose Retry-After is honoured


@dataclass(eq=False)  # compared by identity: each feed of each source is its own schedule entry
class _Feed:
    """What the source remembers about one feed between polls."""

    url: str
    next_poll_at: float = float("-inf")
    polled_on: float | None = None  # when it was last polled, on the source's clock
    failures: int = 0  # the error streak
    error: str | None = None
    fetched_at: datetime | None = None  # when it was last fetched (or tried)
    status: int | None = None  # the last HTTP status; None when no answer came
    succeeded_at: datetime | None = None
    entries: int | None = None  # entries in the last document parsed
    etag: str | None = None
    last_modified: str | None = None
    ttl: float | None = None
    lifetime: float | None = None  # the server's max-age or Expires on its last answer
    items: list[Item] = field(default_factory=list)
    delivered_ids: set[str] = field(default_factory=set)
    delivered_digest: bytes | None = None  # of the last document whose items were delivered

    def health(self, now: float, now_at: datetime) -> dict[str, Any]:
        """What an analyst sees of this feed; `now` on the source's clock, `now_at` in UTC."""
        due_in = max(0.0, self.next_poll_at - now)  # -inf: never fetched yet, due now
        return {
            "url": self.url,
            "last_fetch_at": self.fetched_at and utc_text(self.fetched_at),
            "last_status": self.status,
            "last_success_at": self.succeeded_at and utc_text(self.succeeded_at),
            "error": self.error,
            "error_streak": self.failures,
            "next_due_at": utc_text(now_at + timedelta(seconds=due_in)),
            "entries": self.entries,
        }

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
        scheduler: FetchScheduler | None = None,
        epoch_offset: float | None = None,
    ) -> None:
        self.key = key
        self._fetcher = fetcher
        self._interval = interval
        self._clock = clock
        # the source's clock plus this is epoch seconds, what schedules tick in; fixed, so a
        # tick planned on one clock comes due on the other at the same instant
        self._epoch_offset = time.time() - clock() if epoch_offset is None else epoch_offset
        self._schedules: dict[int, dict[str, Any] | None] = {}  # crawler id -> its schedule
        # Canonical URLs, as in the source key: two spellings of one feed are fetched once.
        self._feeds = [_Feed(url) for url in dict.fromkeys(map(canonical_url, query["feeds"]))]
        self._sink: SourceSink | None = None
        self._round_lock = threading.Lock()  # poll_due: one round at a time
        self._items_lock = threading.Lock()  # snapshot() runs on other threads
        self._scheduler = scheduler  # the node's; None: the source runs one of its own
        self._running: FetchScheduler | None = None  # where the feeds are scheduled, once started
        self._weights: dict[int, int] = {}  # crawler id -> weight of its priority
        self._reported: tuple[str | None, bool] | None = None  # the last error report, if any

    def start(self, sink: SourceSink) -> None:
        """Schedule every feed, due now, delivering to `sink` until stop()."""
        if self._running is not None:
            return
        self._sink = sink
        scheduler = self._scheduler
        if scheduler is None:  # standalone (no node): a scheduler of one fetcher, for this source
            scheduler = FetchScheduler(fetchers=1, name=f"rss-source-{self.key}")
            scheduler.start()
        self._running = scheduler
        weight = self._weight()
        for feed in self._feeds:
            job = functools.partial(self._scheduled_poll, feed, sink)
            scheduler.add(feed, urlsplit(feed.url).hostname or "", weight, job)

    def stop(self) -> None:
        """Withdraw the feeds: none is fetched again. Does not wait: a fetch in flight ends by
        its own deadline, and delivers nothing."""
        scheduler, self._running = self._running, None
        if scheduler is None:
            return
        scheduler.remove(self._feeds)
        if scheduler is not self._scheduler:
            scheduler.stop()

    def attach(self, spec: SubscriberSpec) -> None:
        """The feeds take the highest priority among the subscribers sharing them, and poll
        at the earliest tick among their schedules."""
        self._weights[spec.crawler_id] = PRIORITIES.get(spec.priority, 0)
        self._reweigh()
        if self._schedules.get(spec.crawler_id, False) != spec.schedule:
            self._schedules[spec.crawler_id] = spec.schedule
            self._replan()

    def detach(self, crawler_id: int) -> None:
        self._weights.pop(crawler_id, None)
        self._reweigh()
        if crawler_id in self._schedules:  # the tick it asked for may have been the earliest
            del self._schedules[crawler_id]
            self._replan()

    def _wait(self, feed: _Feed, now: float) -> float:
        """Seconds from a poll at `now` (the source's clock) to the feed's next tick: the
        earliest among its subscribers' schedules (sources.timetable)."""
        polled_at = now + self._epoch_offset
        schedules = list(self._schedules.values())  # one copy: attach runs on other threads
        next_at = timetable.next_poll_at(schedules, polled_at, self._interval)
        return next_at - polled_at

    def _replan(self) -> None:
        """Subscribers came or went with schedules: a feed that is waiting after a good poll
        is due again at the new earliest tick (a failing one keeps its backoff)."""
        moved = []
        for feed in self._feeds:
            if feed.polled_on is not None and feed.failures == 0:
                wait = self._wait(feed, feed.polled_on)
                feed.next_poll_at = due.after_success(feed.polled_on, wait, feed.ttl, feed.lifetime)
                moved.append((feed, feed.next_poll_at))
        if self._running is not None:
            self._running.reschedule(moved)

    def _weight(self) -> int:
        return max(self._weights.values(), default=PRIORITIES[DEFAULT_PRIORITY])

    def _reweigh(self) -> None:
        if self._running is not None:
            self._running.reweigh(self._feeds, self._weight())

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
        if self._running is None:  # stopped: no request, and the entry is gone already
            return NextPoll(now)
        self._poll(feed, sink, now)
        report = (self._errors(), self._failing())
        if self._running is not None and report != self._reported:
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
        feed.fetched_at, feed.status, feed.polled_on = datetime.now(UTC), None, now
        try:
            self._fetch_and_deliver(feed, sink)
        except HttpStatusError as error:
            feed.status = error.status
            asked = None
            if error.status in _ASKS_TO_WAIT:
                asked = due.retry_after(error.headers, datetime.now(UTC))
            self._failed(feed, now, str(error), asked)
            log.warning("feed failed url=%s reason=%s retry_after=%s", feed.url, error, asked)
        except (FetchError, FeedError) as error:
            self._failed(feed, now, str(error))
            log.warning("feed failed url=%s reason=%s", feed.url, error)
        except Exception as error:  # hostile input may find a parser bug; it stays this feed's
            self._failed(feed, now, f"unexpected {type(error).__name__}")
            log.exception("feed failed url=%s reason=unexpected", feed.url)
        else:
            feed.failures, feed.error, feed.succeeded_at = 0, None, feed.fetched_at
            wait = self._wait(feed, now)
            feed.next_poll_at = due.after_success(now, wait, feed.ttl, feed.lifetime)

    def _failed(self, feed: _Feed, now: float, reason: str, asked: float | None = None) -> None:
        feed.failures += 1
        feed.error = reason
        # backoff counts from the schedule's period, or the node's interval if that is shorter:
        # a failed daily poll is retried within the day, not a day or more later
        wait = min(self._wait(feed, now), self._interval)
        feed.next_poll_at = due.after_failure(now, wait, feed.failures, asked)

    def _fetch_and_deliver(self, feed: _Feed, sink: SourceSink) -> None:
        result = self._fetcher.get(feed.url, feed.conditional_headers())
        fetched_at, feed.status = datetime.now(UTC), result.status
        feed.lifetime = due.lifetime(result.headers, fetched_at)
        if result.status == 304:
            return
        digest = hashlib.blake2b(result.body, digest_size=16).digest()
        if digest != feed.delivered_digest:  # servers without validators resend the same bytes
            if not self._parse_and_deliver(feed, result, fetched_at, sink):
                return
            feed.delivered_digest = digest
        # Validators are kept only once the items are delivered: a 304 must never hide
        # items that a failed delivery did not pass on.
        feed.etag = result.headers.get("ETag")
        feed.last_modified = result.headers.get("Last-Modified")

    def _parse_and_deliver(
        self, feed: _Feed, result: FetchResult, fetched_at: datetime, sink: SourceSink
    ) -> bool:
        """Parse a changed document and deliver its new items; False when the source was
        stopped meanwhile (its subscribers are gone, and nothing is delivered)."""
        with self._parse_slot():
            known = {item.id: item for item in feed.items}
            items, feed.ttl = parse_feed(result.body, result.url, fetched_at, result.headers, known)
        feed.entries = len(items)
        with self._items_lock:
            feed.items = items
        if self._scheduler is not None and self._running is None:
            return False
        self._deliver_new(feed, items, sink)
        return True

    def _parse_slot(self) -> AbstractContextManager[Any]:
        running = self._running
        return running.cpu_bound() if running is not None else contextlib.nullcontext()

    def _deliver_new(self, feed: _Feed, items: Sequence[Item], sink: SourceSink) -> None:
        new = [item for item in items if item.id not in feed.delivered_ids]
        if new:
            sink.deliver(new)
        # Only ids still in the document are remembered, so memory follows the feed's size.
        feed.delivered_ids = {item.id for item in items}
