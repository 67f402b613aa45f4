"""The backoff policy: none after no failure, then doubling (or linear) from the first delay up
to the cap, jittered down by at most its share; and the registration's parameters."""

from __future__ import annotations

import random

import pytest

from sources.backoff import Backoff
from spawn.registration import RETRY

DOUBLING = Backoff(first=0.5, cap=10.0)


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(-1, 0.0), (0, 0.0), (1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 10.0)],
)
def test_doubling_from_the_first_delay_up_to_the_cap(failures, delay):
    assert DOUBLING.delay(failures) == delay


@pytest.mark.parametrize("failures", [20, 200, 1025, 10**9])  # 2.0 ** 1024 is past any float
def test_no_overflow_however_long_the_outage(failures):
    assert DOUBLING.delay(failures) == 10.0


def test_linear_grows_by_the_first_delay_up_to_the_cap():
    linear = Backoff(first=0.25, cap=1.0, linear=True)
    assert [linear.delay(n) for n in range(7)] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(("draw", "fraction"), [(0.0, 0.5), (0.5, 0.75), (1.0, 1.0)])
def test_jitter_takes_off_at_most_its_share(draw, fraction):
    jittered = Backoff(first=0.5, cap=10.0, jitter=0.5)
    assert jittered.delay(3, draw) == pytest.approx(2.0 * fraction)
    assert jittered.delay(3) == 2.0  # no draw: the whole delay
    assert jittered.delay(0, draw) == 0.0


# registration: failures in a row -> the delay before jitter
REGISTRATION = [
    (1, 0.5),
    (2, 1.0),
    (3, 2.0),
    (4, 4.0),
    (5, 8.0),
    (6, 10.0),
    (21, 10.0),
    (201, 10.0),
    (1025, 10.0),  # a hub gone for two hours or so: the node still waits, never fails
]


@pytest.mark.parametrize(("failures", "base"), REGISTRATION)
def test_registration_jitter_stays_within_half_and_whole(failures, base):
    rng = random.Random(failures)  # seeded: the same draws every run
    delays = [RETRY.delay(failures, rng.random()) for _ in range(200)]
    assert all(base / 2 <= delay <= base for delay in delays)
    assert len(set(delays)) > 1  # the jitter spreads retries out
