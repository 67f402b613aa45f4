"""A read a scrape waits for only so long (blackwidow.metrics.bounded): the last good answer
kept with when it was read, one read in flight at most, an outage said rather than raised."""

from __future__ import annotations

import threading
import time

from blackwidow.metrics.bounded import BoundedRead

WAIT = 30.0  # seconds: how long to wait for reads that end by themselves; never reached


def soon() -> float:
    """A deadline no read that ends by itself reaches."""
    return time.monotonic() + WAIT


class Dependency:
    """Answers its value, raises while down, or holds each read until let go."""

    def __init__(self) -> None:
        self.value = 1
        self.down = False
        self.held = threading.Event()
        self.held.set()
        self.reads = 0

    def read(self) -> int:
        self.reads += 1
        self.held.wait(WAIT)
        if self.down:
            raise ConnectionError("down")
        return self.value


def _attempt(read: BoundedRead, deadline: float):
    read.start()
    return read.settle(deadline)


def test_an_answer_is_kept_with_when_its_read_started():
    ticks = iter([10.0, 11.0])
    dependency = Dependency()
    read = BoundedRead("d", dependency.read, clock=lambda: next(ticks, 12.0))
    reading = _attempt(read, deadline=WAIT)  # on this test's clock, which reads 12 at most
    assert (reading.answered, reading.value, reading.read_at) == (True, 1, 10.0)


def test_a_failed_read_says_so_and_keeps_the_last_good_value():
    dependency = Dependency()
    read = BoundedRead("d", dependency.read, expected=lambda e: isinstance(e, ConnectionError))
    first = _attempt(read, soon())
    dependency.down, dependency.value = True, 2
    failed = _attempt(read, soon())
    assert failed.answered is False
    assert (failed.value, failed.read_at) == (1, first.read_at)
    dependency.down = False
    assert _attempt(read, soon()).value == 2


def test_a_read_that_hangs_is_given_up_and_no_second_one_starts_beside_it():
    dependency = Dependency()
    read = BoundedRead("d", dependency.read)
    _attempt(read, soon())
    dependency.held.clear()
    dependency.value = 2
    assert _attempt(read, deadline=0.0).answered is False  # the deadline passed: not waited
    hung = _attempt(read, deadline=0.0)
    assert (hung.answered, hung.value) == (False, 1)
    assert dependency.reads == 2  # the second scrape found the first one's read in flight
    dependency.held.set()
    read.settle(soon())  # the hung read ends
    assert _attempt(read, soon()).value == 2
