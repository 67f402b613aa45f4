"""An outage logged once (blackwidow.core.outages): a warning when the first attempt fails, none
for the attempts after it, one line when an attempt succeeds again saying how long it lasted;
time passed in."""

from __future__ import annotations

import logging

import pytest

from blackwidow.core.outages import Outage, describe

log = logging.getLogger("blackwidow.test")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_one_warning_and_its_recovery_one_line_with_its_length(caplog) -> None:
    clock = Clock()
    outage = Outage(log, "database", clock=clock, part="monitor")
    with caplog.at_level("INFO"):
        assert outage.answered() is None  # nothing failed: nothing to say
        assert outage.failed(ConnectionError("refused")) is True
        for _ in range(50):
            clock.now += 1.0
            assert outage.failed(ConnectionError("refused")) is False
        assert outage.down
        clock.now += 0.5
        assert outage.answered() == pytest.approx(50.5)
        assert outage.answered() is None
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "database down part=monitor error=ConnectionError: refused"),
        ("INFO", "database back part=monitor after=50.5s failures=51"),
    ]


def test_each_outage_is_told_again() -> None:
    outage = Outage(log, "queue", clock=Clock())
    assert outage.failed("timeout") and outage.answered() is not None
    assert outage.failed("timeout"), "a second outage begins with its own line"


def test_an_error_is_described_by_its_driver_s_error_and_its_first_line() -> None:
    class Wrapped(Exception):
        def __init__(self, orig: Exception) -> None:
            super().__init__("(background) long\nstatement")
            self.orig = orig

    assert describe(Wrapped(OSError("connection refused\nis the server running?"))) == (
        "OSError: connection refused"
    )
    assert describe(TimeoutError()) == "TimeoutError"
    assert len(describe(ValueError("x" * 1000))) == 200
