"""What every test server shares: a child process with its own run dir and log file, waited on
with a deadline, and stopped politely before it is killed."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"


class ServiceError(RuntimeError):
    """A test server did not come up: `reason` says why, the full message adds its log's end."""

    def __init__(self, reason: str, log: str = "") -> None:
        super().__init__(reason + log)
        self.reason = reason


def port_answers(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether anything accepts TCP connections there: cheap, and a hint only, not readiness."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class Service:
    """A server run for the tests; subclasses say how to run it and how to tell that it answers."""

    name = "service"
    stop_signal = signal.SIGTERM
    stop_timeout = 30.0
    ready_timeout = 30.0  # how long a fresh start may take to answer
    user: str | None = None  # system user to run as, when the server refuses to run as root

    def __init__(
        self, run_dir: Path, port: int, host: str = LOOPBACK, namespace: str | None = None
    ) -> None:
        self.run_dir = run_dir
        self.port = port
        self.host = host
        self.namespace = namespace  # a network namespace to run in (`ip netns`), as root
        self.log_path = run_dir / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def answers(self) -> bool:
        raise NotImplementedError

    def run_as(self) -> dict[str, Any]:
        """subprocess arguments that drop to `user`, when one is set; in a namespace, `wrap`
        drops instead, since only root may enter one."""
        if self.user is None or self.namespace is not None:
            return {}
        return {"user": self.user, "group": self.user, "extra_groups": []}

    def wrap(self, command: list[str]) -> list[str]:
        """`command` run in the service's network namespace, as `user`, when one is set."""
        if self.namespace is None:
            return command
        drop = ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--clear-groups"]
        return ["ip", "netns", "exec", self.namespace, *(drop if self.user else []), *command]

    def prepare(self) -> None:
        """Write config and data files before a start; nothing by default."""

    def start(self) -> None:
        """Launch and return at once, so a slow start-up overlaps other work; see wait_ready()."""
        if self.process is not None and self.process.poll() is None:
            raise ServiceError(f"{self.name} is already running")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.wrap(self.command()),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.run_dir,
                **self.run_as(),
            )

    def wait_ready(self, timeout: float) -> None:
        """Return once the server answers; raise with its log if it exits or the deadline passes."""
        deadline = time.monotonic() + timeout
        process = self.process  # stop() from another thread may clear the attribute
        while not self.answers():
            if process is not None and process.poll() is not None:
                status = process.returncode
                raise ServiceError(f"{self.name} exited with status {status}", self._log_tail())
            if time.monotonic() > deadline:
                late = f"{self.name} on {self.host}:{self.port} did not answer in {timeout:.0f} s"
                if process is None:
                    raise ServiceError(f"{late}: the port is held by a process not started here")
                raise ServiceError(late, self._log_tail())
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the process if we started it (SIGKILL if it lingers); the run dir stays for a
        later start()."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(self.stop_signal)
            try:
                self.process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def _log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        tail = "\n".join(text.splitlines()[-lines:])
        return f"; {self.log_path} ends with:\n{tail}"
