"""Start Black Widow servers as child processes and learn their URLs from their first line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
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
        self.terminate()
        return self.wait_stopped(time.monotonic() + timeout)

    def terminate(self) -> None:
        """SIGTERM, when it still runs: the first half of stop, for stopping several at once."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, deadline: float) -> int:
        """Its exit status, killing it (SIGKILL) when it is still running at the deadline."""
        try:
            return self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
        return self.process.wait()

    def kill(self) -> None:
        """kill -9: no clean-up at all, as when a machine dies."""
        self.process.kill()
        self.process.wait()


def stop_all(running: Iterable[Running], timeout: float = 10.0) -> None:
    """SIGTERM to every one at once, then wait for them under one deadline: as long as the
    slowest takes, not the sum."""
    running = list(running)
    for each in running:
        each.terminate()
    deadline = time.monotonic() + timeout
    for each in running:
        each.wait_stopped(deadline)


def _first_line(stream: IO[str]) -> Callable[[float], str | None]:
    """Read the stream's first line in the background; the function returned waits for it
    until a deadline (None: no line by then)."""
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(stream.readline()), daemon=True)
    reader.start()

    def wait(deadline: float) -> str | None:
        reader.join(max(0.0, deadline - time.monotonic()))
        return found[0].strip() if found and found[0].strip() else None

    return wait


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
    return start_together({name: args}, env, log_dir, timeout, wrapper)[0]


def start_together(
    commands: Mapping[str, Sequence[str]],
    env: Mapping[str, str],
    log_dir: Path,
    timeout: float = 30.0,
    wrapper: Sequence[str] = (),
    own_group: bool = False,
) -> list[Running]:
    """`start` several at once, then wait for each one's URL under one deadline. When one
    does not start, or the wait is interrupted (Ctrl-C), every one is stopped again.

    `own_group` puts each in a process group of its own, so a Ctrl-C at the terminal reaches
    only the caller, which stops them in its own time."""
    launched: list[tuple[str, subprocess.Popen[str], Path]] = []
    try:
        for name, args in commands.items():
            log_path = log_dir / f"{name}.log"
            with open(log_path, "a") as log:
                process = subprocess.Popen(
                    [*wrapper, sys.executable, "-m", *args],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    env={**os.environ, **env},
                    process_group=0 if own_group else None,
                )
            launched.append((name, process, log_path))
        return _ready(launched, time.monotonic() + timeout)
    except BaseException:
        stop_all(Running(name, process, "", log) for name, process, log in launched)
        raise


def _ready(
    launched: Sequence[tuple[str, subprocess.Popen[str], Path]], deadline: float
) -> list[Running]:
    """Each launched process with the URL it printed; RuntimeError naming the first that did
    not print one by the deadline."""
    waits = [_first_line(process.stdout) for _, process, _ in launched if process.stdout]
    running = []
    for (name, process, log_path), wait in zip(launched, waits, strict=True):
        url = wait(deadline)
        if url is None:
            raise RuntimeError(f"{name} did not start; see {log_path}")
        running.append(Running(name, process, url, log_path))
    return running
