"""The one logging set-up (blackwidow.core.logs) in a process of its own: with JSON on, every line
on stderr is one object with time, level, logger and message, and the exception's text when
there is one, whatever wrote it (a logger, a warning, a thread's uncaught exception)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime

SCRIPT = """
import logging, threading, warnings
from blackwidow.core import logs
logs.configure({log_format!r})
log = logging.getLogger("blackwidow.example")
log.info("node declared dead node=%s", 3)
try:
    1 / 0
except ZeroDivisionError:
    log.exception("cycle failed")
warnings.warn("an old option")
thread = threading.Thread(target=lambda: 1 / 0, name="monitor")
thread.start()
thread.join()
"""


def _stderr(log_format: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(log_format=log_format)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr.splitlines()


def test_json_lines_carry_time_level_logger_message_and_exception():
    records = [json.loads(line) for line in _stderr("json")]
    first, failed, warned, uncaught = records
    assert {k: first[k] for k in ("level", "logger", "message")} == {
        "level": "INFO",
        "logger": "blackwidow.example",
        "message": "node declared dead node=3",
    }
    assert datetime.fromisoformat(first["time"]).utcoffset().total_seconds() == 0
    assert "exception" not in first
    assert (failed["level"], failed["message"]) == ("ERROR", "cycle failed")
    assert (
        failed["exception"].startswith("Traceback") and "ZeroDivisionError" in failed["exception"]
    )
    assert warned["logger"] == "py.warnings" and "an old option" in warned["message"]
    assert uncaught["message"] == "uncaught exception thread=monitor"
    assert "ZeroDivisionError" in uncaught["exception"]


def test_text_lines_say_the_same_for_people():
    lines = _stderr("text")
    assert " INFO blackwidow.example node declared dead node=3" in lines[0]
    assert any(line.startswith("ZeroDivisionError") for line in lines)
