"""Per-subscriber keyword filter: subscribers of one shared data source each keep their own."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sources.model import Item


def keyword_matcher(keywords: Iterable[str]) -> re.Pattern[str] | None:
    """A case-insensitive whole-word pattern for any keyword; None means 'match everything'."""
    words = sorted({k.strip() for k in keywords if k.strip()})
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def filter_key(keywords: Iterable[str]) -> frozenset[str]:
    """What decides a filter's matches, so two keyword lists that filter alike compare equal:
    the words `keyword_matcher` takes, in any order and any case."""
    return frozenset(k.strip().casefold() for k in keywords if k.strip())


def matches(pattern: re.Pattern[str] | None, item: Item) -> bool:
    """True when the item's title or text contains a keyword (or there are no keywords)."""
    if pattern is None:
        return True
    return any(pattern.search(field) for field in (item.title, item.text) if field)
