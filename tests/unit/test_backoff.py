"""Registration backoff: doubling from 0.5 s, capped at 10 s, jittered down to half at most."""

from __future__ import annotations

import random

import pytest

from sources.backoff import MAX_DELAY
from spawn.registration import FIRST_DELAY, backoff_delay

# attempt -> the delay before jitter
BASES = [
    (0, 0.5),
    (1, 1.0),
    (2, 2.0),
    (3, 4.0),
    (4, 8.0),
    (5, 10.0),  # 16 s capped
    (6, 10.0),
    (20, 10.0),
    (200, 10.0),  # no overflow far out
]


def test_constants():
    assert (FIRST_DELAY, MAX_DELAY) == (0.5, 10.0)


@pytest.mark.parametrize(("attempt", "base"), BASES)
@pytest.mark.parametrize(("jitter", "fraction"), [(0.0, 0.5), (0.5, 0.75), (1.0, 1.0)])
def test_delay(attempt, base, jitter, fraction):
    assert backoff_delay(attempt, jitter=lambda: jitter) == pytest.approx(base * fraction)


@pytest.mark.parametrize(("attempt", "base"), BASES)
def test_any_jitter_stays_within_half_and_whole(attempt, base):
    rng = random.Random(attempt)  # seeded: the same draws every run
    delays = [backoff_delay(attempt, jitter=rng.random) for _ in range(200)]
    assert all(base / 2 <= delay <= base for delay in delays)
    assert len(set(delays)) > 1  # the jitter spreads retries out
