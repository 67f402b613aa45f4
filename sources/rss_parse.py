"""RSS/Atom parsing: bytes of a feed become Items; feedparser is never given anything but bytes.

No I/O and no state: fetching, scheduling and delivery are the data source's job (sources.rss).
"""

from __future__ import annotations

import calendar
import hashlib
import importlib.util
import io
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit
from xml.etree.ElementTree import ParseError

import defusedxml
import defusedxml.ElementTree
import feedparser
import feedparser.api

from sources.model import Item
from sources.urls import canonical_url

# feedparser asks xml.sax for libxml2's driver first; where that is not installed, every
# parse pays a failed import (a search of sys.path, under the import lock every fetcher
# thread shares) before falling back to expat. Ask for expat straight away instead.
if importlib.util.find_spec("drv_libxml2") is None:
    feedparser.api.PREFERRED_XML_PARSERS[:] = []

MAX_TTL = 24 * 3600.0  # a feed's <ttl> cannot silence it for longer than a day
_NOT_TEXT = ("script", "style", "applet")
_BLOCK_TAGS = {"p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"}


class FeedError(Exception):
    """A fetched document that is not a usable feed; str() is the reason."""


class _TextExtractor(HTMLParser):
    """Collects the text of an HTML fragment; script, style and applet contents are not text
    (the elements whose contents feedparser's sanitiser drops, which this replaces)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _NOT_TEXT:
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _NOT_TEXT and self._skipping:
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


def _thread(entry: Any, item_id: str) -> tuple[str | None, str | None]:
    """(conversation_id, in_reply_to) from the feed's own threading, when it has any.

    A reply (Atom threading, RFC 4685 `thr:in-reply-to`) belongs to the conversation of the
    entry it answers; an entry that has a comment thread (`<comments>`, `wfw:commentRss` or
    an Atom `replies` link) starts one named by its own id, so its replies, which can name
    only its id, join it. Other entries are in no conversation.
    """
    parent = entry.get("thr_in-reply-to") or {}
    reply_to = (parent.get("ref") or "").strip() or None
    if reply_to is not None:
        return reply_to, reply_to
    has_thread = entry.get("comments") or entry.get("wfw_commentrss")
    if has_thread or any(link.get("rel") == "replies" for link in entry.get("links", ())):
        return item_id, None
    return None, None


def _item(entry: Any, feed_url: str, fetched_at: datetime) -> Item | None:
    url = _entry_url(entry, feed_url)
    item_id = _entry_id(entry, url)
    if item_id is None:
        return None
    content = entry.get("content") or []
    conversation_id, in_reply_to = _thread(entry, item_id)
    return Item(
        id=item_id,
        source="rss",
        url=url,
        title=_plain_text(entry.get("title_detail")),
        text=_plain_text(content[0] if content else entry.get("summary_detail")),
        author=(entry.get("author") or "").strip() or None,
        published_at=_published_at(entry),
        fetched_at=fetched_at,
        conversation_id=conversation_id,
        in_reply_to=in_reply_to,
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
    the relative URIs inside it need no resolving, and feedparser's own sanitising (a fifth
    of its time on a typical feed) would be thrown away: it is off.
    """
    _refuse_entities(body)
    parsed = feedparser.parse(
        io.BytesIO(body),
        response_headers={"content-type": "application/xml"},
        sanitize_html=False,
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
