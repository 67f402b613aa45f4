"""The fast reader: feedparser-rs reads a decoded feed document, and its output is put in the
shape feedparser gives (its keys, and its own date parser, HTML guess and value fixes, taken
from the pinned feedparser rather than copied), so one extraction (sources.rss.entry_items)
serves both readers.

Only sources.rss.parser_choice decides which documents it may read; this module only adapts.
feedparser-rs is given bytes only: a str it would take for a URL and fetch.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import feedparser_rs
from feedparser.datetimes import _parse_date
from feedparser.html import _cp1252
from feedparser.mixin import _FeedParserMixin


class Reading(NamedTuple):
    """A document as read: the feed's header and its entries, as feedparser shapes them."""

    feed: Any
    entries: list[Any]


# the code points feedparser maps to windows-1252 (str.translate over a whole entry is costly)
_C1_CONTROLS = re.compile("[\x80-\x9f]")


def _fixed(value: str) -> str:
    """feedparser's last touches on every text value (its mixin's pop): UTF-8 that was read
    as Latin-1 repaired, C1 controls read as windows-1252. (Both readers strip whitespace.)"""
    with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError):
        value = value.encode("iso-8859-1").decode("utf-8")
    return value.translate(_cp1252) if _C1_CONTROLS.search(value) else value


def _detail(construct: Any, kind: str | None = None) -> dict[str, Any] | None:
    """A text construct as feedparser's detail dict. RSS says nothing of a title's type, so
    feedparser guesses (text/plain unless it looks like HTML); `kind` is the type to use.
    Its base is empty: the fast path takes no document with an xml:base, and feedparser is
    given no Content-Location."""
    if construct is None:
        return None
    value = construct.value or ""
    if kind is None:  # guessed before the fixes, as feedparser does
        kind = "text/html" if _FeedParserMixin.looks_like_html(value) else "text/plain"
    return {"type": kind, "value": _fixed(value), "base": ""}


def _date(value: str | None) -> Any:
    """feedparser's reading of a date as written (feedparser-rs's own is not the same)."""
    return _parse_date(value) if value else None


def _in_reply_to(entry: Any) -> dict[str, str] | None:
    replies = entry.thr_in_reply_to
    return {"ref": replies[-1].ref} if replies else None


# feedparser's entry keys that sources.rss.entry_items reads, each from feedparser-rs's entry
_FIELDS: dict[str, Callable[[Any], Any]] = {
    "id": lambda entry: _fixed(entry.id or ""),
    "link": lambda entry: _fixed(entry.link or ""),
    "title_detail": lambda entry: _detail(entry.title_detail),
    "summary_detail": lambda entry: _detail(entry.summary_detail, "text/html"),
    "content": lambda entry: [_detail(part, "text/html") for part in entry.content],
    "author": lambda entry: _fixed(entry.author or ""),
    "published_parsed": lambda entry: _date(entry.published),
    "updated_parsed": lambda entry: _date(entry.updated),
    "thr_in-reply-to": _in_reply_to,
    "comments": lambda entry: entry.comments,
    "wfw_commentrss": lambda entry: entry.wfw_commentrss,
    "links": lambda entry: [{"rel": link.rel} for link in entry.links],
}


class _Entry:
    """One entry, adapted field by field as it is asked: an entry the feed had last time
    (parse_feed's `known`) is asked only its id and link."""

    __slots__ = ("_entry",)

    def __init__(self, entry: Any) -> None:
        self._entry = entry

    def get(self, key: str, default: Any = None) -> Any:
        value = _FIELDS[key](self._entry) if key in _FIELDS else None
        return default if value is None else value


def fast_read(utf8: bytes) -> Reading | None:
    """The reading of a UTF-8 document, or None where it may not be feedparser's: where
    feedparser-rs finds the document ill-formed (it would read its own repair), finds no
    entry (whether that is a feed at all is feedparser's call), or gives an entry a blank
    link (it blanks links to loopback and private addresses, which feedparser keeps, and
    cannot tell them from an empty one)."""
    parsed = feedparser_rs.parse(utf8, sanitize_html=False, resolve_relative_uris=False)
    if parsed.bozo or not parsed.entries or any(not entry.link for entry in parsed.entries):
        return None
    feed = {"title_detail": _detail(parsed.feed.title_detail), "ttl": parsed.feed.ttl}
    return Reading(feed, [_Entry(entry) for entry in parsed.entries])
