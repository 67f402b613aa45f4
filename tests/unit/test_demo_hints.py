"""What the demo says will kill a node: Enter only on a terminal, the timer only if it fires."""

from __future__ import annotations

import pytest

from blackwidow.demo.run import _kill_hint

WATCH = "watch its crawlers move on the dashboard"


@pytest.mark.parametrize(
    ("interactive", "kill_after", "duration", "hint"),
    [
        (True, 40, None, f"press Enter to kill a node (kill -9), or it goes after 40 s; {WATCH}"),
        (True, 40, 30, f"press Enter to kill a node (kill -9); {WATCH}"),
        (False, 40, None, f"after 40 s one node is killed (kill -9); {WATCH}"),
        (False, 2.5, 20, f"after 2.5 s one node is killed (kill -9); {WATCH}"),
        (False, 40, 30, None),  # no terminal to press Enter on, and the run ends first
    ],
)
def test_the_kill_hint(interactive, kill_after, duration, hint):
    assert _kill_hint(interactive, kill_after, duration) == hint
