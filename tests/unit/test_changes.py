"""Change numbers: a poll's number is above every change marked before it; removals are kept
up to a bound, and a cursor older than what is kept cannot be answered."""

from __future__ import annotations

from dataclasses import dataclass

from spawn.pool.change_counter import ChangeCounter, Removal


@dataclass
class Thing:
    stamp: int = 0


def test_a_poll_number_is_above_every_change_marked_before_it() -> None:
    counter = ChangeCounter()
    first, second = Thing(), Thing()
    counter.mark(first)
    counter.mark(second)
    polled = counter.number()
    counter.mark(first)

    assert second.stamp < polled < first.stamp


def test_removals_after_a_cursor_and_before_the_poll() -> None:
    counter = ChangeCounter()
    counter.removed("a", 1)
    since = counter.number()
    counter.removed("b", 2)
    counter.removed("b")
    now = counter.number()
    counter.removed("c", 3)  # after this poll: the next one tells it

    assert sorted(counter.removals_after(since, now), key=lambda r: r.number) == [
        Removal(since + 1, 2, "b"),
        Removal(since + 2, None, "b"),
    ]


def test_a_cursor_older_than_the_kept_removals_or_from_the_future_cannot_be_answered() -> None:
    counter = ChangeCounter(kept_removals=2)
    since = counter.number()
    for key in "abc":
        counter.removed(key, 1)  # the first of three is forgotten
    now = counter.number()

    assert counter.removals_after(since, now) is None
    assert counter.removals_after(counter.floor, now) is not None
    assert counter.removals_after(now, now) is None
    assert counter.removals_after(now + 5, now) is None
