"""The fetch schedule: due order, aging under overload, per-host limits and gaps, removal."""

from __future__ import annotations

import pytest

from sources.fetch.fetch_order import Schedule

LOW, NORMAL, HIGH = 1, 2, 4


def take_all(schedule: Schedule, now: float) -> list[str]:
    taken = []
    while (entry := schedule.take(now)) is not None:
        taken.append(entry.key)
    return taken


def test_nothing_is_taken_before_it_is_due():
    schedule = Schedule(host_limit=10)
    schedule.add("a", "h1", NORMAL, due_at=10.0)

    assert schedule.take(9.9) is None
    assert schedule.next_event_at() == 10.0
    assert schedule.take(10.0).key == "a"
    assert schedule.next_event_at() is None


def test_within_a_class_the_oldest_due_goes_first():
    schedule = Schedule(host_limit=10)
    for key, due_at in [("c", 3.0), ("a", 1.0), ("b", 2.0)]:
        schedule.add(key, key, NORMAL, due_at)

    assert take_all(schedule, 5.0) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        # (key, weight, due_at) at now=10: the largest weight * wait goes first
        ([("low", LOW, 0.0), ("high", HIGH, 10.0)], ["low", "high"]),  # 10 > 0
        ([("low", LOW, 8.0), ("high", HIGH, 9.0)], ["high", "low"]),  # 4 > 2
        ([("low", LOW, 2.0), ("high", HIGH, 8.0)], ["high", "low"]),  # 8 == 8: heavier first
        ([("low", LOW, 1.0), ("high", HIGH, 8.0)], ["low", "high"]),  # 9 > 8
        ([("n", NORMAL, 5.0), ("h", HIGH, 8.0), ("l", LOW, 0.0)], ["n", "l", "h"]),  # 10, 8, 10
        # seed 000 would put a fresh high before a low that has waited for ever: not here
        ([("low", LOW, -1000.0), ("high", HIGH, 9.99)], ["low", "high"]),
    ],
)
def test_weighted_wait_orders_an_overload(entries, expected):
    schedule = Schedule(host_limit=10)
    for key, weight, due_at in entries:
        schedule.add(key, key, weight, due_at)

    assert take_all(schedule, 10.0) == expected


def test_a_low_entry_is_not_starved_by_a_stream_of_high_ones():
    schedule = Schedule(host_limit=100)
    schedule.add("low", "l", LOW, due_at=0.0)
    taken_at = None
    for second in range(1, 100):
        schedule.add(f"high-{second}", f"h{second}", HIGH, due_at=float(second))
        entry = schedule.take(float(second))  # one fetcher: one fetch per second
        if entry.key == "low":
            taken_at = second
            break
        schedule.done(entry, float(second), due_at=1e9)

    assert taken_at is not None
    assert taken_at <= 2  # waited 2 s at weight 1 vs a high one that is 0 s late


def test_a_host_runs_at_most_its_limit_and_the_others_are_not_held_up():
    schedule = Schedule(host_limit=2)
    for n in range(4):
        schedule.add(f"busy-{n}", "busy.example", NORMAL, due_at=0.0)
    schedule.add("other", "other.example", NORMAL, due_at=1.0)

    assert take_all(schedule, 2.0) == ["busy-0", "busy-1", "other"]
    assert schedule.in_flight == 3


def test_a_done_fetch_frees_its_host_for_the_parked_entries():
    schedule = Schedule(host_limit=1)
    schedule.add("a", "h", NORMAL, due_at=0.0)
    schedule.add("b", "h", NORMAL, due_at=0.0)
    first = schedule.take(0.0)
    assert schedule.take(0.0) is None

    schedule.done(first, now=1.0, due_at=61.0)

    assert take_all(schedule, 1.0) == ["b"]


def test_starts_at_one_host_keep_the_gap():
    schedule = Schedule(host_limit=10, host_gap=0.5)
    for key in "abc":
        schedule.add(key, "h", NORMAL, due_at=0.0)
    schedule.add("x", "elsewhere", NORMAL, due_at=0.0)

    assert take_all(schedule, 0.0) == ["a", "x"]
    assert schedule.next_event_at() == 0.5  # the host's gap passes
    assert take_all(schedule, 0.4) == []
    assert take_all(schedule, 0.5) == ["b"]
    assert take_all(schedule, 1.0) == ["c"]


def test_a_removed_entry_is_never_taken():
    schedule = Schedule(host_limit=1)
    for key in "abc":
        schedule.add(key, "h", NORMAL, due_at=0.0)
    running = schedule.take(0.0)
    schedule.take(0.0)  # parks b and c behind the busy host

    schedule.remove("b")
    schedule.remove("a")  # in flight: dropped once done
    schedule.done(running, now=1.0, due_at=2.0)

    assert take_all(schedule, 5.0) == ["c"]
    assert len(schedule) == 1
    assert "a" not in schedule


def test_a_key_added_again_while_its_old_entry_runs_keeps_only_the_new_one():
    schedule = Schedule(host_limit=5)
    schedule.add("a", "h", NORMAL, due_at=0.0)
    old = schedule.take(0.0)
    schedule.remove("a")
    schedule.add("a", "h", NORMAL, due_at=3.0)

    schedule.done(old, now=1.0, due_at=2.0)

    assert take_all(schedule, 2.5) == []
    assert take_all(schedule, 3.0) == ["a"]


def test_a_key_cannot_be_scheduled_twice():
    schedule = Schedule()
    schedule.add("a", "h", NORMAL, due_at=0.0)
    with pytest.raises(ValueError, match="already scheduled"):
        schedule.add("a", "h", NORMAL, due_at=0.0)


@pytest.mark.parametrize("state_at", ["waiting", "ready", "parked"])
def test_reweighing_moves_an_entry_to_its_new_class(state_at):
    schedule = Schedule(host_limit=1)
    schedule.add("blocker", "h", HIGH, due_at=0.0)
    schedule.add("low", "h", LOW, due_at=0.0 if state_at != "waiting" else 5.0)
    schedule.add("normal", "h", NORMAL, due_at=0.0 if state_at != "waiting" else 5.0)
    blocker = schedule.take(0.0)
    if state_at == "parked":
        assert schedule.take(0.0) is None
    elif state_at == "ready":
        schedule.advance(0.0)

    schedule.reweigh("low", HIGH)
    schedule.done(blocker, now=6.0, due_at=100.0)

    assert schedule.take(6.0).key == "low"


def test_a_reschedule_after_done_sets_the_next_due_time_and_counts_lateness():
    schedule = Schedule(host_limit=1)
    schedule.add("a", "h", NORMAL, due_at=0.0)
    entry = schedule.take(4.0)
    schedule.done(entry, now=5.0, due_at=65.0)

    assert schedule.late_max == 4.0
    assert schedule.take(64.0) is None
    assert schedule.take(65.0).key == "a"
    assert schedule.taken == 2


def test_a_waiting_entry_moves_to_its_new_due_time_and_a_due_one_stays():
    schedule = Schedule(host_limit=10)
    schedule.add("sooner", "h1", NORMAL, due_at=60.0)
    schedule.add("later", "h2", NORMAL, due_at=5.0)
    schedule.add("due", "h3", NORMAL, due_at=1.0)
    schedule.advance(2.0)  # "due" is ready now

    schedule.reschedule("sooner", 10.0)  # a subscriber with a shorter schedule joined
    schedule.reschedule("later", 30.0)  # the one that asked for 5 left
    schedule.reschedule("due", 90.0)
    schedule.reschedule("unknown", 1.0)

    assert take_all(schedule, 9.9) == ["due"]
    assert take_all(schedule, 10.0) == ["sooner"]
    assert take_all(schedule, 29.9) == []
    assert take_all(schedule, 30.0) == ["later"]
