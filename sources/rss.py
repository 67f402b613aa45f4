"""RSS/Atom data source: polls a set of feeds through the guarded fetcher and delivers new entries.

Keywords are not its business: each subscriber filters what the shared source delivers.
"""

from __future__ import annotations

import calendar
import hashlib
import io
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit
from xml.etree.ElementTree import ParseError

import defusedxml
import defusedxml.ElementTree
import feedparser

from sources.fetcher import FetchError, GuardedFetcher
from sources.model import Item, SourceSink
from sources.urls import canonical_url

log = logging.getLogger(__name__)

WAKE_INTERVAL = 0.2  # how often the thread looks for due feeds (stop() wakes it at once)
STOP_WAIT = 5.0  # stop() waits this long; a fetch still running ends on its own deadline
MAX_TTL = 24 * 3600.0  # a feed's <ttl> cannot silence it for longer than a day
BACKOFF_CAP = 10  # a failing feed is retried at most this many intervals apart
_BLOCK_TAGS = {"p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"}


class FeedError(Exception):
    """A fetched document that is not a usable feed; str() is the reason."""


class _TextExtractor(HTMLParser):
    """Collects the text of an HTML fragment; script and style contents are not text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skipping:
            self._skipping -= 1
        elif tag in _BLOCK_TAGS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _plain_text(detail: Any) -> str | None:
    """The text of a feedparser value; HTML is reduced to its words, plain text is kept as is."""
    if not detail or not detail.get("value"):
        return None
    value = detail["value"]
    if "html" in (detail.get("type") or ""):
        extractor = _TextExtractor()
        extractor.feed(value)
        extractor.close()
        value = "".join(extractor.parts)
    return " ".join(value.split()) or None


def _refuse_entities(body: bytes) -> None:
    """Reject entity declarations and external references before any feed parser expands them.

    Entities are how billion-laughs bombs and file-reading external entities work; feeds have
    no need of them. A DTD without entities is harmless and some old feeds carry one.
    """
    try:
        defusedxml.ElementTree.fromstring(
            body, forbid_dtd=False, forbid_entities=True, forbid_external=True
        )
    except defusedxml.EntitiesForbidden:
        raise FeedError("entities are not allowed in feeds") from None
    except defusedxml.ExternalReferenceForbidden:
        raise FeedError("external references are not allowed in feeds") from None
    except ParseError as error:
        raise FeedError(f"invalid XML: {error}") from None


def _entry_url(entry: Any, feed_url: str) -> str | None:
    """The entry's link made absolute against the feed; only web links are kept."""
    link = (entry.get("link") or "").strip()
    url = urljoin(feed_url, link) if link else ""
    return url if urlsplit(url).scheme.lower() in ("http", "https") else None


def _entry_id(entry: Any, url: str | None) -> str | None:
    guid = (entry.get("id") or "").strip()
    if guid:
        return guid
    if url is None:
        return None
    try:
        return "sha1:" + hashlib.sha1(canonical_url(url).encode()).hexdigest()
    except ValueError:  # a link with a nonsense port cannot be normalised or identified
        return None


def _published_at(entry: Any) -> datetime | None:
    moment = entry.get("published_parsed") or entry.get("updated_parsed")
    if moment is None:
        return None
    try:  # feedparser gives UTC struct_time; timegm reads it as UTC
        return datetime.fromtimestamp(calendar.timegm(moment), UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _item(entry: Any, feed_url: str, fetched_at: datetime) -> Item | None:
    url = _entry_url(entry, feed_url)
    item_id = _entry_id(entry, url)
    if item_id is None:
        return None
    content = entry.get("content") or []
    return Item(
        id=item_id,
        source="rss",
        url=url,
        title=_plain_text(entry.get("title_detail")),
        text=_plain_text(content[0] if content else entry.get("summary_detail")),
        author=(entry.get("author") or "").strip() or None,
        published_at=_published_at(entry),
        fetched_at=fetched_at,
    )


def _ttl(feed: Any) -> float | None:
    """RSS <ttl> is in minutes; anything but a positive whole number is ignored."""
    try:
        minutes = int(str(feed.get("ttl", "")).strip())
    except ValueError:
        return None
    return min(minutes * 60.0, MAX_TTL) if minutes > 0 else None


def parse_feed(body: bytes, feed_url: str, fetched_at: datetime) -> tuple[list[Item], float | None]:
    """Items of a feed document and the feed's own <ttl> in seconds (None if absent).

    feedparser only ever sees the bytes, wrapped in a stream: given a str, or even bytes that
    name an existing path, it would open a URL or a local file. It gets no base URL either:
    with one it rewrites every guid into a URL relative to the feed, so ids would change
    when the feed moves. Links are made absolute here instead; HTML is reduced to text, so
    the relative URIs inside it need no resolving.
    """
    _refuse_entities(body)
    parsed = feedparser.parse(
        io.BytesIO(body),
        response_headers={"content-type": "application/xml"},
        sanitize_html=True,
        resolve_relative_uris=False,
    )
    if not parsed.entries and not parsed.version:
        problem = parsed.get("bozo_exception")
        raise FeedError(f"not a feed ({problem})" if problem else "not a feed")
    items: dict[str, Item] = {}
    for entry in parsed.entries:
        item = _item(entry, feed_url, fetched_at)
        if item is not None:
            items.setdefault(item.id, item)  # a document listing an entry twice yields it once
    return list(items.values()), _ttl(parsed.feed)


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
