"""The rate shown to people (blackwidow.monitor.rates): items stored per second over a window,
read from a few samples at the hub's clock, falling to zero a window after the last item.
Time is passed in."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from blackwidow.monitor.rates import BUCKETS, Rate, Sample, rate, sampled, samples_of, stored

WINDOW = 300.0
POLL = 2.0  # the monitor's default poll interval
T0 = 1_700_000_000.0  # epoch seconds, as the hub's wall clock gives them


def heard(counts: Iterable[tuple[float, int]], window: float = WINDOW) -> tuple[Sample, ...]:
    """The samples after the hub heard each (seconds after T0, count) in turn."""
    samples: tuple[Sample, ...] = ()
    for after, count in counts:
        samples = sampled(samples, count, T0 + after, window)
    return samples


Count = Callable[[float], int]  # a crawler's count, a function of the time


def polls(until: float, count_at: Count) -> list[tuple[float, int]]:
    """What polls every POLL seconds heard of a count."""
    return [(i * POLL, count_at(i * POLL)) for i in range(int(until / POLL) + 1)]


def bursts(size: int, every: float, first_part: int = 0) -> Count:
    """A feed fetched every `every` seconds bringing `size` items, `first_part` of them a poll
    before the rest (a fetch's items stored across two polls: the issue's case)."""

    def count_at(t: float) -> int:
        whole = int(t // every) * size
        return whole + (first_part if t % every >= every - POLL else 0)

    return count_at


@pytest.mark.parametrize(
    ("count_at", "pace", "burst"),
    [
        (lambda t: int(t * 4), 4.0, 8),  # some items every poll
        (bursts(20, 60.0), 20 / 60, 20),  # a feed fetched once a minute
        (bursts(20, 60.0, first_part=12), 20 / 60, 20),  # its items stored across two polls
        (bursts(7, 10.0), 0.7, 7),
    ],
    ids=["steady", "a burst a minute", "a burst split over two polls", "a burst every 10 s"],
)
def test_the_rate_is_the_pace_once_the_window_has_filled(
    count_at: Count, pace: float, burst: int
) -> None:
    samples = heard(polls(3 * WINDOW, count_at))
    for now in (3 * WINDOW, 3 * WINDOW + 1.0, 3 * WINDOW + POLL - 0.1):
        shown = rate(samples, T0 + now, WINDOW)
        assert shown.window == WINDOW
        # the window's ends may cut a burst, and the items of the poll to come are not heard
        error = burst / WINDOW + pace * POLL / WINDOW
        assert shown.per_second == pytest.approx(pace, abs=error)


def test_a_steady_pace_reads_within_a_percent() -> None:
    samples = heard(polls(2 * WINDOW, lambda t: int(t * 4)))
    assert rate(samples, T0 + 2 * WINDOW, WINDOW).per_second == pytest.approx(4.0, rel=0.01)


def test_it_falls_to_zero_a_window_after_the_last_item() -> None:
    samples = heard(polls(WINDOW, lambda t: int(t * 4)))  # 4 a second, then nothing more
    last = T0 + WINDOW
    assert rate(samples, last + WINDOW / 2, WINDOW).per_second == pytest.approx(2.0, rel=0.02)
    assert rate(samples, last + WINDOW - POLL, WINDOW).per_second < 0.05
    assert rate(samples, last + WINDOW, WINDOW) == Rate(0.0, WINDOW)
    assert rate(samples, last + 10 * WINDOW, WINDOW) == Rate(0.0, WINDOW)


def test_items_after_a_long_silence_are_not_spread_over_it() -> None:
    samples = heard([(0.0, 100), (1000.0, 130)])
    assert rate(samples, T0 + 1000.0, WINDOW).per_second == pytest.approx(30 / WINDOW)
    assert rate(samples, T0 + 1000.0 + WINDOW - 1, WINDOW).per_second == pytest.approx(30 / WINDOW)
    assert rate(samples, T0 + 1000.0 + WINDOW, WINDOW).per_second == 0.0


def test_while_the_hub_has_heard_for_less_than_a_window_the_window_says_so() -> None:
    samples = heard([(0.0, 500), (30.0, 530), (60.0, 560)])  # items stored before: not counted
    assert rate(samples, T0 + 60.0, WINDOW) == Rate(1.0, 60.0)
    assert rate(samples, T0, WINDOW) == Rate(0.0, 0.0)
    assert rate((), T0, WINDOW) == Rate(0.0, WINDOW)  # heard nothing: stored nothing


def test_a_count_that_falls_stored_nothing_and_keeps_what_was_stored() -> None:
    samples = heard([(0.0, 100), (100.0, 160), (200.0, 130)])  # 30 expired, none stored
    assert samples[-1].count == 130
    assert rate(samples, T0 + 200.0, WINDOW) == Rate(60 / 200.0, 200.0)


def test_the_same_count_again_adds_nothing_and_a_clock_set_back_reorders_nothing() -> None:
    samples = heard([(0.0, 10), (10.0, 12)])
    assert sampled(samples, 12, T0 + 20.0, WINDOW) == samples
    back = sampled(samples, 15, T0 + 5.0, WINDOW)
    assert [s.at for s in back] == sorted(s.at for s in back)
    assert back[-1] == Sample(15, T0 + 10.0, T0 + 10.0)


@pytest.mark.parametrize("every", [0.1, POLL, 7.0, 31.0, 60.0])
def test_a_crawler_keeps_a_few_samples_whatever_its_pace(every: float) -> None:
    samples: tuple[Sample, ...] = ()
    longest = 0
    for i in range(int(5 * WINDOW / every)):
        samples = sampled(samples, i, T0 + i * every, WINDOW)
        longest = max(longest, len(samples))
    assert longest <= 2 * BUCKETS + 2


def test_samples_go_to_sql_and_back_as_they_were() -> None:
    samples = heard(polls(WINDOW, lambda t: int(t * 3)))
    assert samples_of(stored(samples)) == samples
    assert samples_of(None) == ()
