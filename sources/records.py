"""Records of a paged listing made Items: what an extractor found on one page, field by field.

Pure, shared by the configured sources (sources.page, sources.jsonapi): an item's id is its
configured id field, else its canonical URL; its URL is made absolute against the page it
was found on; a record with neither is no item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit

from sources.model import Item, parse_utc
from sources.url_keys import resolved_url
from sources.urls import canonical_url

# The fields a configured source may extract from each record.
FIELDS = ("title", "url", "text", "author", "published_at", "id")
MAX_FIELD_CHARS = 100_000  # a runaway match (a whole page as "text") is cut here


class PageError(Exception):
    """A fetched page that cannot be read as the query says (not JSON, say); str() is why."""


@dataclass(frozen=True)
class Page:
    """What one page of a listing gave: its items, in order, and the next page's URL, if any."""

    items: Sequence[Item]
    next_url: str | None


def clean_text(text: str | None) -> str | None:
    """Runs of whitespace made one space, ends trimmed, capped; None when nothing is left."""
    if text is None:
        return None
    cleaned = " ".join(text.split())[:MAX_FIELD_CHARS]
    return cleaned or None


def absolute_url(link: str | None, page_url: str) -> str | None:
    """A link made absolute against the page it was found on; only web links are kept."""
    link = (link or "").strip()
    if not link:
        return None
    url = urljoin(page_url, link)
    try:
        canonical_url(url)  # a nonsense port cannot be an address
    except ValueError:
        return None
    return url if urlsplit(url).scheme.lower() in ("http", "https") else None


def published_at(text: str | None) -> datetime | None:
    """ISO-8601, an HTTP/RSS date, or seconds (milliseconds, if that large) since the epoch."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        seconds = number / 1000 if number > 1e11 else number
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    moment = parse_utc(text)
    if moment is not None:
        return moment
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def item_from_record(
    source: str, record: Mapping[str, str | None], page_url: str, fetched_at: datetime
) -> Item | None:
    """The item of one record (field -> text as extracted); None without an id or a URL."""
    url = absolute_url(record.get("url"), page_url)
    item_id = clean_text(record.get("id")) or (url and resolved_url(url))
    if not item_id:
        return None
    return Item(
        id=item_id,
        source=source,
        url=url,
        title=clean_text(record.get("title")),
        text=clean_text(record.get("text")),
        author=clean_text(record.get("author")),
        published_at=published_at(record.get("published_at")),
        fetched_at=fetched_at,
    )
