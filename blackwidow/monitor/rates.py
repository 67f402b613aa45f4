"""The rate shown to people: items stored per second over a stated window, read from a few
(count, at) samples of each crawler taken at the hub's clock. Pure: time is passed in.

The monitor adds a sample when a poll brings a crawler's new count, and writes the samples
with the count, so a rate costs what changed. The rate is read from them when it is shown:
`(count now - count at the window's start) / window`, so it falls to zero a window after the
last item without a write. A window keeps about two samples per tenth of it, whatever the
pace. The leases keep their own rate, smoothed over polls (blackwidow.monitor.report_intake).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

DEFAULT_WINDOW = 300.0  # BLACKWIDOW_RATE_WINDOW's default, as Prometheus' rate(...[5m])
BUCKETS = 10  # samples closer than a tenth of the window are merged into one rise


class Sample(NamedTuple):
    """The count the hub heard at `at` (epoch seconds): it rose to it from the sample before
    between `since` and `at`, flat before `since` (polls in between said nothing new)."""

    count: int
    at: float
    since: float


class Rate(NamedTuple):
    per_second: float
    window: float  # seconds it is over: the window, or less while the hub has heard for less


def sampled(samples: Sequence[Sample], count: int, at: float, window: float) -> tuple[Sample, ...]:
    """The samples once the hub heard `count` at `at`, pruned to one sample at or before the
    window's start. A count that fell (items expired or deleted) stored nothing: the earlier
    samples move down with it, so what was stored in the window stays counted."""
    kept = list(samples)
    if kept and count == kept[-1].count:
        return tuple(kept)
    if kept and count < kept[-1].count:
        fell = kept[-1].count - count
        return tuple(sample._replace(count=sample.count - fell) for sample in kept)
    at = max(at, kept[-1].at) if kept else at  # a clock set back does not reorder them
    kept.append(Sample(count, at, at))
    if len(kept) >= 3 and at - kept[-3].at <= window / BUCKETS:
        kept[-1] = kept[-1]._replace(since=kept[-2].since)  # one rise from the earlier's start
        del kept[-2]
    while len(kept) >= 2 and kept[1].at <= at - window:
        del kept[0]
    return tuple(kept)


def rate(samples: Sequence[Sample], now: float, window: float) -> Rate:
    """Items stored per second over the `window` seconds before `now`, or over the time since
    the first sample while that is shorter; nothing heard yet is nothing stored."""
    if not samples:
        return Rate(0.0, window)
    start = max(now - window, samples[0].at)
    over = now - start
    if over <= 0:
        return Rate(0.0, 0.0)
    return Rate(max(0.0, (samples[-1].count - count_at(samples, start)) / over), over)


def count_at(samples: Sequence[Sample], moment: float) -> float:
    """The count at `moment` (not before the first sample): flat after each sample, rising
    evenly over the next sample's [since, at]."""
    before = samples[0]
    for sample in samples[1:]:
        if moment < sample.at:
            if moment <= sample.since:
                return before.count
            rose = (moment - sample.since) / (sample.at - sample.since)
            return before.count + (sample.count - before.count) * rose
        before = sample
    return before.count


def samples_of(stored: Any) -> tuple[Sample, ...]:
    """Samples as SQL keeps them (`[[count, at, since], ...]`, or null), read back."""
    return tuple(Sample(int(c), float(at), float(since)) for c, at, since in stored or ())


def stored(samples: Sequence[Sample]) -> list[list[float]]:
    """Samples as SQL keeps them: to the millisecond, a few tens of bytes each."""
    return [[sample.count, round(sample.at, 3), round(sample.since, 3)] for sample in samples]
