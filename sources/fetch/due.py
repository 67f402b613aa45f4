"""When a polled resource is next due: interval, the server's own lifetimes, and failure backoff.

Pure: every function takes the response headers and the time it needs. The
scheduler (sources.fetch.scheduler) applies jitter; the data sources (sources.rss.source)
keep the per-feed state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime

from sources.backoff import Backoff

MAX_LIFETIME = 24 * 3600.0  # max-age, Expires or Retry-After silence a feed a day at most
# in intervals, not seconds: a failing feed is retried at most ten intervals apart
FAILED_POLLS = Backoff(first=2.0, cap=10.0)
_MAX_AGE = re.compile(r"(?:^|[,\s])max-age\s*=\s*\"?(\d+)\"?", re.IGNORECASE)
_NO_CACHE = re.compile(r"(?:^|[,\s])(?:no-cache|no-store)\b", re.IGNORECASE)


def _http_date(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return moment if moment.tzinfo is not None else None


def _capped(seconds: float) -> float | None:
    return min(seconds, MAX_LIFETIME) if seconds > 0 else None


def lifetime(headers: Mapping[str, str], now_at: datetime) -> float | None:
    """Seconds the server says its answer stays fresh: `Cache-Control: max-age`, else
    `Expires` (against the server's `Date`, else `now_at`); None when it says nothing, says
    "no-cache"/"no-store", or the answer is already stale. Capped at MAX_LIFETIME."""
    control = headers.get("Cache-Control") or ""
    if _NO_CACHE.search(control):
        return None
    found = _MAX_AGE.search(control)
    if found:
        return _capped(float(found.group(1)))
    expires = _http_date(headers.get("Expires"))
    if expires is None:
        return None
    served_at = _http_date(headers.get("Date")) or now_at
    return _capped((expires - served_at).total_seconds())


def retry_after(headers: Mapping[str, str], now_at: datetime) -> float | None:
    """Seconds a server asked us to wait (`Retry-After`: seconds or an HTTP date), capped at
    MAX_LIFETIME; None when absent, unreadable or already past."""
    text = (headers.get("Retry-After") or "").strip()
    if text.isdigit():
        return _capped(float(text))
    moment = _http_date(text)
    return None if moment is None else _capped((moment - now_at).total_seconds())


def after_success(now: float, interval: float, *lifetimes: float | None) -> float:
    """Due time after a good poll: one interval on, or later if the feed (`<ttl>`) or the
    server (max-age, Expires) says its content lasts longer."""
    return now + max([interval, *(min(s, MAX_LIFETIME) for s in lifetimes if s)])


def backoff(interval: float, failures: int) -> float:
    """Wait after `failures` failures in a row: doubling intervals (2, 4, 8, ...) up to
    ten intervals (FAILED_POLLS), so a failing feed costs its server a trickle, not a storm."""
    return interval * FAILED_POLLS.delay(failures)


def after_failure(now: float, interval: float, failures: int, asked: float | None = None) -> float:
    """Due time after a failed poll: the backoff, or longer if the server asked (Retry-After)."""
    return now + max(backoff(interval, failures), asked or 0.0)
