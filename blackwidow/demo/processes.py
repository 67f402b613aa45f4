"""Start Black Widow servers as child processes and learn their URLs from their first line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass
class Running:
    name: str
    process: subprocess.Popen[str]
    url: str
    log_path: Path

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then SIGKILL if it does not end in time; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()

    def kill(self) -> None:
        """kill -9: no clean-up at all, as when a machine dies."""
        self.process.kill()
        self.process.wait()


def _first_line(stream: IO[str], deadline: float) -> str | None:
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(max(0.0, deadline - time.monotonic()))
    return found[0].strip() if found and found[0].strip() else None


def start(
    name: str,
    args: Sequence[str],
    env: Mapping[str, str],
    log_dir: Path,
    timeout: float = 30.0,
    wrapper: Sequence[str] = (),
) -> Running:
    """Run `python -m <args>`; its stdout's first line is its URL, its stderr goes to a log file.

    `wrapper` is a command that runs it and becomes it (`ip netns exec NAME`), or nothing."""
    log_path = log_dir / f"{name}.log"
    with open(log_path, "a") as log:
        process = subprocess.Popen(
            [*wrapper, sys.executable, "-m", *args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, **env},
        )
    assert process.stdout is not None
    url = _first_line(process.stdout, time.monotonic() + timeout)
    if url is None:
        process.kill()
        process.wait()
        raise RuntimeError(f"{name} did not start; see {log_path}")
    return Running(name, process, url, log_path)
