"""Failure detection: scripted heartbeat times against the phi-accrual detector.

Settings used unless a test says otherwise: heartbeats expected every 1 s, 1 s of acceptable
pause, a minimum standard deviation of 0.1 s, suspect at phi 3 and dead at phi 8. For a node
with a perfectly steady 1 s rhythm phi reaches 3 after 2 + 3.09 * 0.1 = 2.31 s of silence and
8 after 2 + 5.61 * 0.1 = 2.56 s (phi = -log10 of the normal tail beyond the silence).
"""

import math

import pytest

from blackwidow.monitor.detector import FailureDetector, PhiAccrualDetector, PhiSettings, Verdict

SETTINGS = PhiSettings(
    suspect_phi=3.0, dead_phi=8.0, min_std=0.1, acceptable_pause=1.0, window=10, first_interval=1.0
)
ALIVE, SUSPECT, DEAD = Verdict.ALIVE, Verdict.SUSPECT, Verdict.DEAD


def steady(node_id: int, start: float, count: int, every: float = 1.0) -> list[tuple]:
    return [("beat", node_id, start + n * every) for n in range(count)]


# A script is a list of steps run in order against one detector started at t=100:
#   ("beat", node_id, at)           -> heartbeat
#   ("is", node_id, now, verdict)   -> assert verdict(node_id, now) == verdict
#   ("forget", node_id)             -> forget
SCRIPTS = {
    "a steady node is alive, then suspect, then dead as silence grows": [
        *steady(1, 100.0, 20),  # last beat at 119
        ("is", 1, 121.2, ALIVE),
        ("is", 1, 121.4, SUSPECT),
        ("is", 1, 121.6, DEAD),
    ],
    "a jittery history earns more patience than a steady one": [
        *[("beat", 2, 100.0 + 2.0 * n + (0.5 if n % 2 else 0.0)) for n in range(20)],
        *steady(1, 100.0, 39),  # both last beat around 138
        ("is", 1, 141.0, DEAD),
        ("is", 2, 141.0, ALIVE),
    ],
    "each heartbeat restarts the silence": [
        *steady(1, 100.0, 20),
        ("is", 1, 121.2, ALIVE),
        ("beat", 1, 120.0),  # on rhythm: the history stays steady
        ("is", 1, 122.2, ALIVE),
        ("is", 1, 122.7, DEAD),
    ],
    "a late older heartbeat does not age the node": [
        *steady(1, 100.0, 20),
        ("beat", 1, 110.0),
        ("is", 1, 121.2, ALIVE),
    ],
    "a heartbeat after death revives the node": [
        *steady(1, 100.0, 20),
        ("is", 1, 130.0, DEAD),
        ("beat", 1, 130.5),
        ("is", 1, 131.0, ALIVE),
    ],
    "nodes are independent": [
        *steady(1, 100.0, 10),
        *steady(2, 105.0, 10),
        ("is", 1, 112.0, DEAD),
        ("is", 2, 112.0, ALIVE),
    ],
    "a heartbeat from before the hub started counts from started_at": [
        ("beat", 1, 50.0),
        ("is", 1, 102.0, ALIVE),
        ("is", 1, 104.0, DEAD),
    ],
    "a never-seen node is not dead on sight, and dies if it never answers": [
        ("is", 7, 500.0, ALIVE),
        ("is", 7, 502.0, ALIVE),
        ("is", 7, 504.0, DEAD),
    ],
    "a forgotten node starts afresh at the next question": [
        *steady(1, 100.0, 5),
        ("is", 1, 200.0, DEAD),
        ("forget", 1),
        ("is", 1, 300.0, ALIVE),
        ("is", 1, 302.0, ALIVE),
        ("is", 1, 304.0, DEAD),
    ],
    "the window forgets an old jittery past": [
        *[("beat", 1, 100.0 + 3.0 * n) for n in range(5)],  # 3 s intervals until 112
        *steady(1, 113.0, 15),  # ten 1 s intervals now fill the window; last beat at 127
        ("is", 1, 129.7, DEAD),
    ],
    "forgetting an unknown node is harmless": [
        ("forget", 9),
        ("is", 9, 100.0, ALIVE),
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
            assert detector.verdict(node_id, now) is expected, (step_number, node_id, now)


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
def test_scripts(script):
    run_script(PhiAccrualDetector(SETTINGS, started_at=100.0), script)


def test_phi_follows_the_normal_tail_of_the_history():
    detector = PhiAccrualDetector(SETTINGS, started_at=0.0)
    for step in steady(1, 0.0, 11):  # ten intervals of exactly 1 s: std falls back to 0.1
        detector.heartbeat(1, step[2])
    assert detector.phi(1, 12.0) == pytest.approx(math.log10(2))  # silence == mean + pause
    assert detector.phi(1, 12.1) == pytest.approx(-math.log10(0.5 * math.erfc(1 / math.sqrt(2))))


def test_phi_only_grows_with_silence_and_is_infinite_without_error():
    detector = PhiAccrualDetector(SETTINGS, started_at=0.0)
    for step in steady(1, 0.0, 11):
        detector.heartbeat(1, step[2])
    values = [detector.phi(1, 10.0 + tenth / 10) for tenth in range(0, 400)]
    assert values == sorted(values)
    assert detector.phi(1, 10_000.0) == math.inf
    assert detector.verdict(1, 10_000.0) is DEAD


def test_implements_the_protocol():
    assert isinstance(PhiAccrualDetector(SETTINGS, started_at=0.0), FailureDetector)


@pytest.mark.parametrize(
    "changes",
    [
        {"suspect_phi": 9.0},
        {"suspect_phi": 0.0},
        {"min_std": 0.0},
        {"acceptable_pause": -1.0},
        {"first_interval": 0.0},
        {"window": 1},
    ],
)
def test_settings_are_checked(changes):
    fields = {**SETTINGS.__dict__, **changes}
    with pytest.raises(ValueError):
        PhiSettings(**fields)


def test_a_node_just_heard_has_phi_zero_never_minus_zero():
    """A beat that is certain to come gives -log10(1.0): -0.0, which every view of phi (the
    node list, `nodes ls`, the dashboard, /metrics) would print with its sign."""
    detector = PhiAccrualDetector(SETTINGS, started_at=0.0)
    for step in steady(1, 0.0, 11):
        detector.heartbeat(1, step[2])
    phi = detector.phi(1, 10.0)
    assert phi == 0.0 and math.copysign(1.0, phi) == 1.0


def time_to_dead(detector: PhiAccrualDetector, node_id: int, last_beat: float) -> float:
    """Seconds after the node's last beat until it is judged dead, to a tenth of a second."""
    for tenth in range(1, 10_000):
        if detector.verdict(node_id, last_beat + tenth / 10) is DEAD:
            return tenth / 10
    raise AssertionError("never judged dead")


def polled(detector: PhiAccrualDetector, node_id: int, asks: list[float], answer_after: float):
    """Polls asked at `asks`, each answered `answer_after` seconds later."""
    for asked_at in asks:
        detector.heartbeat(node_id, asked_at + answer_after, asked_at=asked_at)


def test_a_hub_stall_does_not_teach_the_detector_to_wait_longer():
    """The hub sends no polls for 30 s (its own stall), then polls on time again: a node that
    answered every poll it was sent promptly is judged dead as fast as one whose hub never
    stalled. Intervals are the node's to explain only from when the hub asked."""
    every = 1.0
    steady_asks = [100.0 + every * n for n in range(5)]
    after_stall = [134.0 + every * n for n in range(5)]  # nothing asked from 104 to 134
    stalled = PhiAccrualDetector(SETTINGS, started_at=100.0)
    polled(stalled, 1, [*steady_asks, *after_stall], answer_after=0.01)
    never = PhiAccrualDetector(SETTINGS, started_at=100.0)
    polled(never, 1, [100.0 + every * n for n in range(10)], answer_after=0.01)
    assert time_to_dead(stalled, 1, after_stall[-1] + 0.01) == time_to_dead(never, 1, 109.01)


def test_a_node_slow_to_answer_on_time_polls_still_earns_patience():
    """A node that takes 3 s to answer polls asked on time has long intervals of its own."""
    detector = PhiAccrualDetector(SETTINGS, started_at=100.0)
    answered = 100.0
    for _ in range(10):
        asked_at = answered  # the next poll goes out as soon as the last one came back
        answered = asked_at + 3.0
        detector.heartbeat(1, answered, asked_at=asked_at)
    assert detector.verdict(1, answered + 3.5) is ALIVE


def test_a_node_is_not_condemned_for_a_stall_of_the_hub():
    """The hub sends no polls for 30 s; the first poll after it goes unanswered. The node's
    silence counts from when the hub asked again, not from its last answer before the stall:
    alive then, and dead as soon as a node whose hub never stalled would be."""
    detector = PhiAccrualDetector(SETTINGS, started_at=100.0)
    polled(detector, 1, [100.0 + n for n in range(5)], answer_after=0.01)  # last answer 104.01
    detector.missed(1, asked_at=134.0)
    assert detector.verdict(1, 134.5) is ALIVE
    never = PhiAccrualDetector(SETTINGS, started_at=100.0)
    polled(never, 1, [100.0 + n for n in range(5)], answer_after=0.01)
    never.missed(1, asked_at=105.0)
    assert time_to_dead(detector, 1, 134.0) == time_to_dead(never, 1, 105.0)
