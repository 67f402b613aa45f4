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


def matches(pattern: re.Pattern[str] | None, item: Item) -> bool:
    """True when the item's title or text contains a keyword (or there are no keywords)."""
    if pattern is None:
        return True
    return any(pattern.search(field) for field in (item.title, item.text) if field)
