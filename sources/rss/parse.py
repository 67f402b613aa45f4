"""RSS/Atom parsing: bytes of a feed become Items; feedparser is never given anything but bytes.

No I/O and no state: fetching, scheduling and delivery are the data source's job
(sources.rss.source).
"""

from __future__ import annotations

import calendar
import hashlib
import importlib.util
import io
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, NamedTuple
from urllib.parse import urljoin, urlsplit

import feedparser
import feedparser.api

from sources.model import Item
from sources.rss.feed_guard import refusal
from sources.rss.feed_html import plain_text, sanitised_html
from sources.url_keys import DEFAULT_KEYS, UrlKeys, resolved_url

# feedparser asks xml.sax for libxml2's driver first; where that is not installed, every
# parse pays a failed import (a search of sys.path, under the import lock every fetcher
# thread shares) before falling back to expat. Ask for expat straight away instead.
if importlib.util.find_spec("drv_libxml2") is None:
    feedparser.api.PREFERRED_XML_PARSERS[:] = []

MAX_TTL = 24 * 3600.0  # a feed's <ttl> cannot silence it for longer than a day
# an XML declaration, in single bytes, that names a two- or four-byte encoding
_WIDE_DECLARATION = re.compile(
    rb"\s*<\?xml[^>]*encoding\s*=\s*[\"']\s*(?:utf|ucs|iso-10646-ucs)-?_?(?:16|32|2|4)",
    re.IGNORECASE,
)


class ParsedFeed(NamedTuple):
    """What one parse gives: the items, the feed's <ttl> in seconds and its own title (None
    where absent)."""

    items: list[Item]
    ttl: float | None
    title: str | None


class FeedError(Exception):
    """A fetched document that is not a usable feed; str() is the reason."""


def _entry_url(entry: Any, feed_url: str) -> str | None:
    """The entry's link made absolute against the feed; only web links are kept."""
    link = (entry.get("link") or "").strip()
    url = urljoin(feed_url, link) if link else ""
    return url if urlsplit(url).scheme.lower() in ("http", "https") else None


def _entry_id(entry: Any, url: str | None, keys: UrlKeys) -> str | None:
    """The entry's guid, else a digest of its resolved link (sources.url_keys), so the link
    with tracking or cache-busting parameters is the same item as without."""
    guid = (entry.get("id") or "").strip()
    if guid:
        return guid
    if url is None:
        return None
    try:
        return "sha1:" + hashlib.sha1(resolved_url(url, keys).encode()).hexdigest()
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

    A reply (Atom threading, RFC 4685 `thr:in-reply-to`) names only the entry it answers, so
    it is given that entry's id for both; the store, which knows the parent, puts it in the
    conversation of the thread's root (blackwidow.store.threads). An entry that has a comment
    thread (`<comments>`, `wfw:commentRss` or an Atom `replies` link) starts one named by its
    own id. Other entries are in no conversation.
    """
    parent = entry.get("thr_in-reply-to") or {}
    reply_to = (parent.get("ref") or "").strip() or None
    if reply_to is not None:
        return reply_to, reply_to
    has_thread = entry.get("comments") or entry.get("wfw_commentrss")
    if has_thread or any(link.get("rel") == "replies" for link in entry.get("links", ())):
        return item_id, None
    return None, None


def _item(entry: Any, item_id: str, url: str | None, feed_url: str, fetched_at: datetime) -> Item:
    content = entry.get("content") or []
    body = content[0] if content else entry.get("summary_detail")
    conversation_id, in_reply_to = _thread(entry, item_id)
    return Item(
        id=item_id,
        source="rss",
        url=url,
        title=plain_text(entry.get("title_detail")),
        text=plain_text(body),
        author=(entry.get("author") or "").strip() or None,
        published_at=_published_at(entry),
        fetched_at=fetched_at,
        conversation_id=conversation_id,
        in_reply_to=in_reply_to,
        html=sanitised_html(body, url, feed_url),
    )


def _title(feed: Any) -> str | None:
    """The feed's own title as plain text (an export names the feed by it), None if blank."""
    return plain_text(feed.get("title_detail"))


def _ttl(feed: Any) -> float | None:
    """RSS <ttl> is in minutes; anything but a positive whole number is ignored."""
    try:
        minutes = int(str(feed.get("ttl", "")).strip())
    except ValueError:
        return None
    return min(minutes * 60.0, MAX_TTL) if minutes > 0 else None


def content_type(headers: Mapping[str, str], body: bytes) -> str:
    """The Content-Type a document is read with: the response's, else application/xml.

    Without one the document is all there is, so it is read as XML is without a charset:
    the XML declaration, else the BOM, decide, UTF-8 by default (feedparser, given headers
    without a Content-Type, would assume Latin-1 and garble every undeclared UTF-8 feed);
    its fallbacks, windows-1252 first, still catch undeclared Latin-1. A declaration of
    UTF-16 or UTF-32 written in single bytes cannot be true (whoever reads it is not reading
    UTF-16): browsers then read UTF-8, and so does this, unless the server named a charset.
    """
    value = next((v for name, v in headers.items() if name.lower() == "content-type"), "")
    value = value.strip() or "application/xml"
    if _WIDE_DECLARATION.match(body) and "charset" not in value.lower():
        value += "; charset=utf-8"
    return value


def parse_feed(
    body: bytes,
    feed_url: str,
    fetched_at: datetime,
    headers: Mapping[str, str],
    known: Mapping[str, Item] = MappingProxyType({}),
    keys: UrlKeys = DEFAULT_KEYS,
) -> ParsedFeed:
    """Items of a feed document, with the feed's own <ttl> and title.

    An entry whose id is `known` (from the feed's last document) is that item again, not
    extracted anew: a changed feed mostly repeats what it had, and an item's text and HTML
    cost a fifth of the parse. `keys` are the crawlers' url_keys rules, for entries
    without a guid.

    The document is decoded as feedparser documents it (RFC 3023): the HTTP charset of an
    XML or text Content-Type, else the BOM and the XML declaration, then UTF-8,
    windows-1252 and ISO-8859-2 until one fits. Of the `headers`, only the Content-Type
    reaches feedparser, under the lower-case name it looks up: Content-Location would give
    it a base URL, and with one it rewrites every guid into a URL relative to the feed, so
    ids would change when the feed moves. Links are made absolute here instead.

    feedparser only ever sees the bytes, wrapped in a stream: given a str, or even bytes that
    name an existing path, it would open a URL or a local file. Its own HTML sanitising
    (a fifth of its time on a typical feed) is off: sources.rss.feed_html does it with nh3.
    sources.rss.feed_guard refuses entity declarations first; anything else, however sloppy,
    is feedparser's to read or to call not a feed.
    """
    kind = content_type(headers, body)
    reason = refusal(body, kind)
    if reason is not None:
        raise FeedError(reason)
    parsed = feedparser.parse(
        io.BytesIO(body),
        response_headers={"content-type": kind},
        sanitize_html=False,
        resolve_relative_uris=False,
    )
    if not parsed.entries and not parsed.get("version"):
        problem = parsed.get("bozo_exception")
        raise FeedError(f"not a feed ({problem})" if problem else "not a feed")
    items: dict[str, Item] = {}
    for entry in parsed.entries:
        url = _entry_url(entry, feed_url)
        item_id = _entry_id(entry, url, keys)
        if item_id is None:
            continue
        if item_id not in items:  # a document listing an entry twice yields it once
            items[item_id] = known.get(item_id) or _item(entry, item_id, url, feed_url, fetched_at)
    return ParsedFeed(list(items.values()), _ttl(parsed.feed), _title(parsed.feed))
