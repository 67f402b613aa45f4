"""Feed entries, in the shape feedparser gives them, become Items; the feed's own <ttl> and
title are read from its header the same way.

Pure: whichever reader produced the entries (sources.rss.parse chooses), the extraction is
this one, so an item's id and fields cannot depend on the reader.
"""

from __future__ import annotations

import calendar
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

from sources.model import Item
from sources.rss.feed_html import plain_text, sanitised_html
from sources.url_keys import UrlKeys, resolved_url

MAX_TTL = 24 * 3600.0  # a feed's <ttl> cannot silence it for longer than a day


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
    conversation of the thread's root (blackwidow.core.store.threads). An entry that has a comment
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


def entry_items(
    entries: list[Any],
    feed_url: str,
    fetched_at: datetime,
    known: Mapping[str, Item],
    keys: UrlKeys,
) -> list[Item]:
    """The items of `entries`, each once; an entry whose id is `known` is that item again."""
    items: dict[str, Item] = {}
    for entry in entries:
        url = _entry_url(entry, feed_url)
        item_id = _entry_id(entry, url, keys)
        if item_id is None:
            continue
        if item_id not in items:  # a document listing an entry twice yields it once
            items[item_id] = known.get(item_id) or _item(entry, item_id, url, feed_url, fetched_at)
    return list(items.values())


def feed_title(feed: Any) -> str | None:
    """The feed's own title as plain text (an export names the feed by it), None if blank."""
    return plain_text(feed.get("title_detail"))


def feed_ttl(feed: Any) -> float | None:
    """RSS <ttl> is in minutes; anything but a positive whole number is ignored."""
    try:
        minutes = int(str(feed.get("ttl", "")).strip())
    except ValueError:
        return None
    return min(minutes * 60.0, MAX_TTL) if minutes > 0 else None
