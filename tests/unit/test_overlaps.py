"""When two writers' totals may hold one item twice, and when a recount may mend them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from types import SimpleNamespace

from blackwidow.core.store.cassandra.overlaps import RECOUNTED, Totals, read, recount_due

QUIET = 2.0
ONE, TWO = uuid.uuid4(), uuid.uuid4()


def row(writer: uuid.UUID, stored: int, began: float | None, written: float) -> SimpleNamespace:
    """A bucket_totals row as the driver reads it: naive UTC datetimes, write times in µs."""
    at = None if began is None else datetime.fromtimestamp(began, UTC).replace(tzinfo=None)
    return SimpleNamespace(writer=writer, stored=stored, began=at, written=int(written * 1e6))


def totals(*rows: SimpleNamespace) -> Totals:
    return read(rows)


def test_one_writer_is_never_recounted() -> None:
    alone = totals(row(ONE, 5, 100.0, 110.0), row(ONE, 7, 100.0, 120.0))
    assert alone.counted == 12
    assert recount_due(alone, ONE, now=1000.0, quiet=QUIET) is None


def test_writers_one_after_another_are_never_recounted() -> None:
    moved = totals(row(ONE, 5, 100.0, 110.0), row(TWO, 3, 200.0, 210.0))
    assert recount_due(moved, TWO, now=1000.0, quiet=QUIET) is None


def test_writers_at_once_are_recounted_once_the_other_is_quiet() -> None:
    overlapped = totals(row(ONE, 5, 100.0, 150.0), row(TWO, 3, 140.0, 160.0))
    assert recount_due(overlapped, TWO, now=151.0, quiet=QUIET) is None  # ONE wrote just now
    assert recount_due(overlapped, TWO, now=153.0, quiet=QUIET) == 160.0
    assert recount_due(overlapped, ONE, now=161.0, quiet=QUIET) is None  # TWO wrote just now


def test_a_write_just_before_the_other_began_counts_as_at_once() -> None:
    """Its confirm may land after the other's first read."""
    close = totals(row(ONE, 5, 100.0, 139.0), row(TWO, 3, 140.0, 160.0))
    assert recount_due(close, TWO, now=200.0, quiet=QUIET) == 160.0


def test_a_recount_mends_what_came_before_it_only() -> None:
    mended = totals(
        row(ONE, 5, 100.0, 150.0),
        row(TWO, 3, 140.0, 160.0),
        row(RECOUNTED, -1, 160.0, 170.0),
    )
    assert (mended.counted, mended.correction) == (7, -1)
    assert recount_due(mended, TWO, now=300.0, quiet=QUIET) is None
    again = totals(
        row(ONE, 9, 100.0, 250.0),
        row(TWO, 4, 140.0, 260.0),
        row(RECOUNTED, -1, 160.0, 170.0),
    )
    assert recount_due(again, TWO, now=300.0, quiet=QUIET) == 260.0


def test_rows_written_before_began_was_kept_are_points_in_time() -> None:
    old = totals(row(ONE, 5, None, 100.0), row(TWO, 3, 140.0, 160.0))
    assert recount_due(old, TWO, now=300.0, quiet=QUIET) is None
