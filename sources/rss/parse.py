"""RSS/Atom parsing: bytes of a feed become Items; no parser is ever given anything but bytes.

No I/O and no state: fetching, scheduling and delivery are the data source's job
(sources.rss.source). Two readers share the work: feedparser, which reads anything, and
feedparser-rs (sources.rss.fast_reader), about twenty times cheaper, for the documents
sources.rss.parser_choice finds it reads exactly as feedparser does. Entries become items in
one place (sources.rss.entry_items) whichever read them.
"""

from __future__ import annotations

import importlib.util
import io
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import NamedTuple

import feedparser
import feedparser.api

from sources.model import Item
from sources.rss.entry_items import entry_items, feed_title, feed_ttl
from sources.rss.fast_reader import Reading, fast_read
from sources.rss.feed_guard import decoded, refusal
from sources.rss.parser_choice import takes_fast_path
from sources.url_keys import DEFAULT_KEYS, UrlKeys

# feedparser asks xml.sax for libxml2's driver first; where that is not installed, every
# parse pays a failed import (a search of sys.path, under the import lock every fetcher
# thread shares) before falling back to expat. Ask for expat straight away instead.
if importlib.util.find_spec("drv_libxml2") is None:
    feedparser.api.PREFERRED_XML_PARSERS[:] = []

# an XML declaration, in single bytes, that names a two- or four-byte encoding
_WIDE_DECLARATION = re.compile(
    rb"\s*<\?xml[^>]*encoding\s*=\s*[\"']\s*(?:utf|ucs|iso-10646-ucs)-?_?(?:16|32|2|4)",
    re.IGNORECASE,
)

# a reader: (the document, its Content-Type, the document as decoded or None) -> its reading
Reader = Callable[[bytes, str, bytes | None], Reading]


class ParsedFeed(NamedTuple):
    """What one parse gives: the items, the feed's <ttl> in seconds and its own title (None
    where absent)."""

    items: list[Item]
    ttl: float | None
    title: str | None


class FeedError(Exception):
    """A fetched document that is not a usable feed; str() is the reason."""


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


def feedparser_read(body: bytes, kind: str, utf8: bytes | None = None) -> Reading:
    """feedparser's reading of the document, or FeedError where it finds no feed in it. It
    decodes the bytes itself; `utf8`, that same decoding, is there for the Reader signature.

    feedparser only ever sees the bytes, wrapped in a stream: given a str, or even bytes that
    name an existing path, it would open a URL or a local file. Of the response's headers,
    only the Content-Type reaches it: Content-Location would give it a base URL, and with one
    it rewrites every guid into a URL relative to the feed, so ids would change when the feed
    moves. Its own HTML sanitising (a fifth of its time) is off: sources.rss.feed_html does
    it with nh3.
    """
    parsed = feedparser.parse(
        io.BytesIO(body),
        response_headers={"content-type": kind},
        sanitize_html=False,
        resolve_relative_uris=False,
    )
    if not parsed.entries and not parsed.get("version"):
        problem = parsed.get("bozo_exception")
        raise FeedError(f"not a feed ({problem})" if problem else "not a feed")
    return Reading(parsed.feed, parsed.entries)


def routed_read(body: bytes, kind: str, utf8: bytes | None) -> Reading:
    """The fast reader's reading where the rule allows it and it reads the document without
    complaint, feedparser's otherwise."""
    if utf8 is not None and takes_fast_path(utf8):
        reading = fast_read(utf8)
        if reading is not None:
            return reading
    return feedparser_read(body, kind)


def parse_with(
    read: Reader,
    body: bytes,
    feed_url: str,
    fetched_at: datetime,
    headers: Mapping[str, str],
    known: Mapping[str, Item] = MappingProxyType({}),
    keys: UrlKeys = DEFAULT_KEYS,
) -> ParsedFeed:
    """parse_feed with the reader given: a differential test compares the two readers."""
    kind = content_type(headers, body)
    utf8 = decoded(body, kind)
    reason = refusal(body, kind, utf8)
    if reason is not None:
        raise FeedError(reason)
    reading = read(body, kind, utf8)
    items = entry_items(reading.entries, feed_url, fetched_at, known, keys)
    return ParsedFeed(items, feed_ttl(reading.feed), feed_title(reading.feed))


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
    windows-1252 and ISO-8859-2 until one fits; the fast reader is given that decoding.
    Links are made absolute here, not by either reader. sources.rss.feed_guard refuses
    entity declarations first; anything else, however sloppy, is feedparser's to read or
    to call not a feed.
    """
    return parse_with(routed_read, body, feed_url, fetched_at, headers, known, keys)
