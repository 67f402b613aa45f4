"""When two writers of one crawler may both have counted an item, and when that can be mended.

Two nodes writing one crawler at once (the overlap of a move, a node cut off from the hub)
can each read an item's id before the other's confirm lands, take it as new, and count it:
both totals in bucket_totals then hold it. Pure: the store reads a crawler's totals, with
each writer's first write (`began`) and its row's write time, and asks this whether a
recount is due. Two writers whose spans come within `quiet` of each other overlapped; once
every other writer has been quiet for `quiet` (its writes in flight have landed), the store
counts the crawler's distinct confirmed ids and writes the difference as the total of one
more writer, RECOUNTED, that names the time it is good through. A recount done twice writes
the same row: it is idempotent, like every other write of the store.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

RECOUNTED = uuid.UUID(int=0)  # the writer whose total mends the others' overlaps


@dataclass(frozen=True)
class Span:
    """One writer's time writing a crawler, in seconds since the epoch."""

    writer: uuid.UUID
    began: float  # its first write of the crawler (its last, for rows written before began)
    last: float  # its latest write


@dataclass(frozen=True)
class Totals:
    """A crawler's bucket_totals rows as read."""

    counted: int  # every row's total, the recount's correction included
    correction: int  # RECOUNTED's total
    through: float  # when the last recount was good through (0: never recounted)
    spans: tuple[Span, ...]


def read(rows: Iterable[Any]) -> Totals:
    """Rows with `writer`, `stored`, `began` (a datetime or None) and `written` (the write
    time of `stored`, in microseconds)."""
    counted = correction = 0
    through = 0.0
    began: dict[uuid.UUID, float] = {}
    last: dict[uuid.UUID, float] = {}
    for row in rows:
        counted += row.stored
        if row.writer == RECOUNTED:
            correction += row.stored
            through = _seconds(row.began) or 0.0
            continue
        written = row.written / 1e6
        last[row.writer] = max(last.get(row.writer, written), written)
        first = _seconds(row.began) or written
        began[row.writer] = min(began.get(row.writer, first), first)
    spans = tuple(Span(w, began[w], last[w]) for w in sorted(last, key=lambda w: began[w]))
    return Totals(counted, correction, through, spans)


def unmended(totals: Totals, quiet: float) -> float | None:
    """The latest write of a pair of writers that overlapped after the last recount (None:
    no such pair, so the totals count every item once)."""
    latest = None
    spans = totals.spans
    for i, one in enumerate(spans):
        for other in spans[i + 1 :]:
            met = max(one.began, other.began) <= min(one.last, other.last) + quiet
            end = max(one.last, other.last)
            if met and end > totals.through:
                latest = end if latest is None else max(latest, end)
    return latest


def recount_due(totals: Totals, me: uuid.UUID, now: float, quiet: float) -> float | None:
    """The time a recount now would be good through, when one is due: writers overlapped
    since the last, and every writer but `me` (whose writes the caller holds back) has been
    quiet for `quiet`. None otherwise."""
    through = unmended(totals, quiet)
    if through is None:
        return None
    if any(span.last > now - quiet for span in totals.spans if span.writer != me):
        return None
    return through


def _seconds(at: datetime | None) -> float | None:
    """The driver reads timestamps as naive UTC datetimes."""
    return None if at is None else at.replace(tzinfo=UTC).timestamp()
