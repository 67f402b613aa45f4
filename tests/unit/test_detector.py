"""Failure detection: scripted heartbeat times against DeadAfterDetector."""

import pytest

from blackwidow.monitor.detector import DeadAfterDetector, FailureDetector

# A script is a list of steps run in order against one detector:
#   ("beat", node_id, at)            -> heartbeat
#   ("dead", node_id, now, expected) -> assert is_dead(node_id, now) == expected
#   ("forget", node_id)              -> forget
SCRIPTS = {
    "silent strictly more than dead_after is dead": [
        ("beat", 1, 100.0),
        ("dead", 1, 110.0, False),
        ("dead", 1, 110.001, True),
    ],
    "each heartbeat restarts the silence": [
        ("beat", 1, 100.0),
        ("beat", 1, 108.0),
        ("dead", 1, 115.0, False),
        ("dead", 1, 118.5, True),
    ],
    "a late older heartbeat does not age the node": [
        ("beat", 1, 108.0),
        ("beat", 1, 101.0),
        ("dead", 1, 117.0, False),
    ],
    "a heartbeat after death revives the node": [
        ("beat", 1, 100.0),
        ("dead", 1, 120.0, True),
        ("beat", 1, 121.0),
        ("dead", 1, 125.0, False),
    ],
    "nodes are independent": [
        ("beat", 1, 100.0),
        ("beat", 2, 105.0),
        ("dead", 1, 112.0, True),
        ("dead", 2, 112.0, False),
    ],
    "a heartbeat from before the hub started counts from started_at": [
        ("beat", 1, 50.0),
        ("dead", 1, 105.0, False),
        ("dead", 1, 110.0, False),
        ("dead", 1, 111.0, True),
    ],
    "a never-seen node is not dead on sight at hub start": [
        ("dead", 1, 100.0, False),
        ("dead", 1, 110.0, False),
        ("dead", 1, 110.5, True),
    ],
    "a never-seen node counts from the first time it is asked about": [
        ("dead", 7, 500.0, False),
        ("dead", 7, 509.0, False),
        ("dead", 7, 511.0, True),
    ],
    "a never-seen node counts from its first heartbeat": [
        ("beat", 7, 500.0),
        ("dead", 7, 505.0, False),
        ("dead", 7, 511.0, True),
    ],
    "a forgotten node starts afresh at the next is_dead": [
        ("beat", 1, 100.0),
        ("dead", 1, 200.0, True),
        ("forget", 1),
        ("dead", 1, 300.0, False),
        ("dead", 1, 310.0, False),
        ("dead", 1, 310.5, True),
    ],
    "a forgotten node starts afresh at its next heartbeat": [
        ("beat", 1, 120.0),
        ("forget", 1),
        ("beat", 1, 115.0),
        ("dead", 1, 126.0, True),
    ],
    "forgetting an unknown node is harmless": [
        ("forget", 9),
        ("dead", 9, 100.0, False),
    ],
}


def run_script(detector: FailureDetector, script: list[tuple]) -> None:
    for step_number, (action, node_id, *rest) in enumerate(script):
        if action == "beat":
            detector.heartbeat(node_id, rest[0])
        elif action == "forget":
            detector.forget(node_id)
        else:
            now, expected = rest
            assert detector.is_dead(node_id, now) is expected, (step_number, node_id, now)


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
def test_dead_after_scripts(script):
    run_script(DeadAfterDetector(dead_after=10.0, started_at=100.0), script)


def test_implements_the_protocol():
    assert isinstance(DeadAfterDetector(dead_after=1.0, started_at=0.0), FailureDetector)


@pytest.mark.parametrize("dead_after", [0.0, -1.0])
def test_dead_after_must_be_positive(dead_after):
    with pytest.raises(ValueError):
        DeadAfterDetector(dead_after=dead_after, started_at=0.0)
