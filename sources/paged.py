"""A paged-listing data source: walks a listing page by page and delivers its new items.

Shared by the configured source types (sources.page for HTML, sources.jsonapi for JSON APIs),
which give it the first page's URL and how to read a page (sources.records.Page). The
listing is one entry of the node's fetch scheduler, polled like a feed: a walk starts with a
conditional GET of the first page (304, or the same bytes as the last whole walk: nothing
new), then reads one page per scheduler run, `page_interval` seconds apart, so a walk never holds a
fetcher while it waits. It ends at the last page, at `page_limit` pages, or at a next link
back to a page read this walk. The next walk is due at the next tick counted from this
one's start, as a feed's next poll from its last, so a walk slowed by its host does not push
the listing's schedule later. A failed page ends the walk with a backoff (sources.fetch.polled).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from sources.fetch.fetcher import FetchError, FetchResult, GuardedFetcher
from sources.fetch.polled import PollState
from sources.fetch.scheduled_entries import ScheduledEntries
from sources.fetch.scheduler import FetchScheduler, NextPoll
from sources.model import Item, SourceSink, SubscriberSpec
from sources.records import Page, PageError
from sources.source_type import SourceContext
from sources.urls import canonical_url

log = logging.getLogger(__name__)

# How a source type reads one fetched page: body, the page's URL, when it was fetched.
Extract = Callable[[bytes, str, datetime], Page]


@dataclass
class _Walk:
    """One poll's way through the listing, from its first page."""

    first: FetchResult
    began_on: float  # when its first page was asked for, on the scheduler's clock
    next_url: str | None = None
    pages: int = 0  # pages read so far
    read: set[str] = field(default_factory=set)  # canonical URLs of the pages read so far
    items: dict[str, Item] = field(default_factory=dict)  # by id, in listing order


class PagedSource:
    """One listing shared by every subscriber whose query configures it alike."""

    def __init__(
        self,
        key: str,
        first_url: str,
        extract: Extract,
        fetcher: GuardedFetcher,
        interval: float,
        page_limit: int,
        page_interval: float,
        scheduler: FetchScheduler | None = None,
        clock: Callable[[], float] = time.monotonic,  # the scheduler's clock
    ) -> None:
        self.key = key
        self._first = PollState(first_url)
        self._extract = extract
        self._fetcher = fetcher
        self._interval = interval
        self._page_limit = page_limit
        self._page_interval = page_interval
        self._clock = clock
        name = f"paged-source-{key}"
        self._entries = ScheduledEntries(scheduler, name, interval, self._replanned, clock)
        self._sink: SourceSink | None = None
        self._walk: _Walk | None = None
        self._items: dict[str, Item] = {}  # of the last whole walk
        self._digest: bytes | None = None  # of the first page of the last whole walk
        self._items_lock = threading.Lock()  # snapshot() runs on other threads
        self._reported: str | None = None

    def start(self, sink: SourceSink) -> None:
        """Schedule the listing, due now, delivering to `sink` until stop()."""
        self._sink = sink
        host = urlsplit(self._first.url).hostname or ""
        self._entries.start({self._first: (host, self.run)})

    def stop(self) -> None:
        """Withdraw the listing; a page in flight ends by its own deadline and delivers nothing."""
        self._entries.stop()

    def attach(self, spec: SubscriberSpec) -> None:
        self._entries.attach(spec)

    def detach(self, crawler_id: int) -> None:
        self._entries.detach(crawler_id)

    def snapshot(self) -> list[Item]:
        """The items of the last whole walk, and of the one under way."""
        with self._items_lock:
            under_way = self._walk.items if self._walk is not None else {}
            return list({**self._items, **under_way}.values())

    def feeds(self) -> list[dict[str, Any]]:
        """The listing's health, as a feed's: its first page's last fetch, errors, next due,
        and as `entries` the items its last whole walk found."""
        health = self._first.health(self._clock(), datetime.now(UTC))
        return [{**health, "entries": len(self._items)}]

    def run(self, now: float) -> NextPoll:
        """The scheduler's job: read the next page of the walk (or start one); say when the
        listing is next due: after the page interval mid-walk, else at its next poll."""
        sink = self._sink
        if sink is None or self._entries.stopped:  # stopped: no request, the entry is gone
            return NextPoll(now)
        walk = self._walk
        page = f"{walk.next_url}: " if walk is not None else ""  # the first page is the listing's
        began_on = walk.began_on if walk is not None else now
        try:
            if walk is None:
                self._begin(sink, now)
            else:
                self._take(walk, self._fetcher.get(walk.next_url or self._first.url), sink)
        except (FetchError, PageError) as error:
            self._failed(f"{page}{error}", error)
        except Exception as error:  # hostile input may find an extractor bug; it stays here
            self._failed(f"{page}unexpected {type(error).__name__}", error)
        self._report(sink)
        if self._walk is not None:  # from this page's start, as a crawl-delay
            self._first.next_poll_at = now + self._page_interval
            return NextPoll(self._first.next_poll_at)
        return NextPoll(self._next_due_at(began_on, now), retry=self._first.failures > 0)

    def _next_due_at(self, began_on: float, now: float) -> float:
        """When the next walk starts, after one that began at `began_on` and read its last
        page at `now`: at the next tick of the subscribers' schedules counted from its start,
        as a feed's from its poll (sources.fetch.scheduled_entries), yet a page interval after
        that last page at the soonest; or later when the server asks. A failure backs off from
        `now`."""
        if self._first.failures:
            return self._first.plan(now, self._entries.wait(now), self._interval)
        due_at = self._first.plan(began_on, self._entries.wait(began_on), self._interval)
        self._first.next_poll_at = max(due_at, now + self._page_interval)
        return self._first.next_poll_at

    def _replanned(self) -> list[tuple[PollState, float]]:
        """Subscribers came or went with schedules: a listing waiting between walks is due at
        the new earliest tick (mid-walk, its next page keeps its politeness delay)."""
        if self._walk is not None:
            return []
        due_at = self._first.replan(self._entries.wait, self._interval)
        return [] if due_at is None else [(self._first, due_at)]

    def _begin(self, sink: SourceSink, now: float) -> None:
        """The first page, fetched conditionally: unchanged, it ends the poll at once."""
        state = self._first
        state.began()
        result = self._fetcher.get(state.url, state.conditional_headers())
        state.answered(result.status, result.headers, datetime.now(UTC))
        if result.status == 304 or _digest(result) == self._digest:
            state.succeeded()
            return
        walk = self._walk = _Walk(first=result, began_on=now, read={canonical_url(state.url)})
        self._take(walk, result, sink)

    def _take(self, walk: _Walk, result: FetchResult, sink: SourceSink) -> None:
        """Deliver a page's new items; go on to its next page unless the walk ends here."""
        walk.pages += 1
        walk.read.add(canonical_url(result.url))
        with self._entries.cpu_bound():
            page = self._extract(result.body, result.url, datetime.now(UTC))
        known = self._items.keys() | walk.items.keys()
        new = [item for item in page.items if item.id not in known]
        with self._items_lock:
            walk.items.update((item.id, item) for item in page.items)
        if new and not self._entries.stopped:
            sink.deliver(new)
        following = page.next_url
        if following is None or walk.pages >= self._page_limit:
            self._finish(walk)
        elif canonical_url(following) in walk.read:
            log.info("listing loops back url=%s next=%s", result.url, following)
            self._finish(walk)
        else:
            walk.next_url = following

    def _finish(self, walk: _Walk) -> None:
        """A whole walk: its items are what the listing holds now, and the first page's
        validators may spare the next poll (only now: a 304 must hide nothing undelivered)."""
        with self._items_lock:
            self._items, self._walk = walk.items, None
        self._digest = _digest(walk.first)
        self._first.keep_validators(walk.first.headers)
        self._first.succeeded()

    def _failed(self, reason: str, error: Exception) -> None:
        """The walk ends here; what it delivered stays known, so the next one skips it."""
        with self._items_lock:
            if self._walk is not None:
                self._items = {**self._items, **self._walk.items}
            self._walk = None
        self._first.failed(reason, error)
        if isinstance(error, FetchError | PageError):
            log.warning("listing failed url=%s reason=%s", self._first.url, reason)
        else:
            log.error("listing failed url=%s", self._first.url, exc_info=error)

    def _report(self, sink: SourceSink) -> None:
        """Only a change is news: subscribers that join later are told by the pool."""
        error = self._first.error
        if error != self._reported and not self._entries.stopped:
            self._reported = error
            sink.report_error(error and f"{self._first.url}: {error}", failing=error is not None)


def open_listing(
    key: str, query: dict[str, Any], first_url: str, extract: Extract, context: SourceContext
) -> PagedSource:
    """A configured listing as a node opens it, from a validated page or json query."""
    return PagedSource(
        key,
        first_url,
        extract,
        context.fetcher,
        context.feed_interval,
        page_limit=query["page_limit"],
        page_interval=query["page_interval"],
        scheduler=context.scheduler,
    )


def _digest(result: FetchResult) -> bytes:
    return hashlib.blake2b(result.body, digest_size=16).digest()
