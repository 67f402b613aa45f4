"""How the hub's screens word ages, counts and rates, the same on the dashboard and in the
CLI's tables: `71 s ago`, `1,500,000`, `12.3/min over 5 min`. Pure; imports nothing of the
hub, so the REST client may use it too."""

from __future__ import annotations

DASH = "\u2013"  # for no value at all


def age(seconds: float) -> str:
    """`4 s ago`, `3 min ago`, `2 h ago`, `5 d ago`."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h ago"
    return f"{seconds / 86400:.0f} d ago"


def thousands(value: float | None) -> str:
    """`1,500,000`: a count with its thousands separated; a dash for none. Ids are not counts:
    screens write them bare, as URLs and the API do."""
    if value is None:
        return DASH
    return f"{value:,.0f}" if isinstance(value, float) else f"{value:,}"


def per_minute(per_second: float | None) -> str:
    """A `rate` (items per second) per minute: `0/min`, `4.5/min`, `1,200/min`."""
    value = (per_second or 0) * 60
    if not value:
        return "0/min"
    return f"{value:.1f}/min" if value < 10 else f"{value:,.0f}/min"


def window(seconds: float) -> str:
    """`45 s` below two minutes, else `5 min` (`2.5 min`)."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{round(seconds / 60, 1):g} min"


def rate_over(per_second: float | None, seconds: float) -> str:
    """A rate naming its window: `12.3/min over 5 min`."""
    return f"{per_minute(per_second)} over {window(seconds)}"
