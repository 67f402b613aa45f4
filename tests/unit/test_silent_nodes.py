"""Silent nodes (blackwidow.monitor.silent_nodes): a node whose polls fail is one line, and one
when it answers again; probes of a dead node back off, capped, and start afresh for a node
that is dead again later. Time passed in."""

from __future__ import annotations

from blackwidow.monitor.silent_nodes import ProbeSchedule, Silences
from blackwidow.node_client import NodeTarget, NodeUnreachable
from sources.backoff import Backoff

NODE = NodeTarget(3, "http://10.0.0.3:8100", 1)


def probe_times(schedule: ProbeSchedule, until: float, answered_at: float | None = None):
    """When a poll loop of one second sends probes to NODE, silent until `answered_at`."""
    sent = []
    for tick in range(int(until)):
        now = float(tick)
        for probe in schedule.due([NODE], now):
            sent.append(now)
            schedule.probed(probe.id, answered_at is not None and now >= answered_at, now)
    return sent


def test_probes_of_a_dead_node_back_off_to_their_cap() -> None:
    schedule = ProbeSchedule(Backoff(first=1.0, cap=8.0))
    assert probe_times(schedule, 40) == [0, 1, 3, 7, 15, 23, 31, 39]


def test_a_node_that_answers_a_probe_is_probed_at_once_again() -> None:
    schedule = ProbeSchedule(Backoff(first=1.0, cap=8.0))
    assert probe_times(schedule, 20, answered_at=8) == [0, 1, 3, 7, 15, 16, 17, 18, 19]


def test_a_node_no_longer_dead_is_forgotten_and_probed_at_once_when_dead_again() -> None:
    schedule = ProbeSchedule(Backoff(first=1.0, cap=8.0))
    probe_times(schedule, 10)
    assert schedule.due([], 10.0) == []  # registered again: no longer probed
    assert schedule.due([NODE], 11.0) == [NODE]  # declared dead again: a fresh start


def test_a_silent_node_is_one_line_and_its_answer_one(caplog) -> None:
    now = [0.0]
    silences = Silences(lambda: now[0])
    with caplog.at_level("INFO"):
        for _ in range(30):
            silences.failed(NODE, NodeUnreachable("timed out"))
            now[0] += 2.0
        silences.answered(NODE.id)
        silences.answered(NODE.id)
    assert [r.getMessage() for r in caplog.records] == [
        "node unreachable node=3 url=http://10.0.0.3:8100 error=NodeUnreachable: timed out",
        "node answers again node=3 url=http://10.0.0.3:8100 after=60.0s failures=30",
    ]


def test_a_node_no_longer_listed_is_forgotten_in_silence(caplog) -> None:
    silences = Silences(lambda: 0.0)
    silences.failed(NODE, NodeUnreachable("refused"))
    silences.keep([])
    caplog.clear()
    with caplog.at_level("INFO"):
        silences.answered(NODE.id)
    assert caplog.records == []
