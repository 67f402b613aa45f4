"""The processes a hub benchmark runs: hubs, simulated nodes, PostgreSQL, a baseline checkout.

Every process started here is remembered by a `Processes` and stopped by it (SIGTERM, then
SIGKILL), whatever ends the run. Every wait has a deadline. Nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import ctypes
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psycopg
import requests

from tests.services.postgres import Postgres

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
PR_SET_PDEATHSIG = 1


class Unsettled(Exception):
    """A wait reached its deadline; str() says what did not happen."""


def wait_for(what: str, condition: Any, timeout: float, every: float = 0.2) -> float:
    """Seconds until `condition()` is true; Unsettled once `timeout` passes."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise Unsettled(f"{what}: did not settle within {timeout:.0f}s")
        time.sleep(every)
    return time.monotonic() - started


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _die_with_parent() -> None:
    """In the child before exec: be SIGKILLed if the benchmark itself dies (Linux prctl)."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Processes:
    """Children of this run, stopped together by `stop_all`."""

    def __init__(self) -> None:
        self._children: list[subprocess.Popen[Any]] = []

    def start(self, command: list[str], log: Path, **kwargs: Any) -> subprocess.Popen[Any]:
        with open(log, "ab") as err:
            child = subprocess.Popen(
                command, stderr=err, start_new_session=True, preexec_fn=_die_with_parent, **kwargs
            )
        self._children.append(child)
        return child

    def stop_all(self) -> None:
        """In start order, each before the next: hubs stop before their nodes vanish, so no
        hub declares nodes dead while the run is being taken down."""
        for child in self._children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self._children.clear()


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its live children (a gunicorn master's workers)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == pid:
            total += int(fields[11]) + int(fields[12])
    return cpu_seconds(pid) + total / os.sysconf("SC_CLK_TCK")


@dataclass
class Hub:
    """A hub: one `blackwidow hub` process, or the Procfile's web (gunicorn) and monitor."""

    processes: list[subprocess.Popen[Any]]
    url: str
    log: Path

    @property
    def process(self) -> subprocess.Popen[Any]:
        return self.processes[0]

    def exited(self) -> subprocess.Popen[Any] | None:
        return next((p for p in self.processes if p.poll() is not None), None)

    def cpu_seconds(self) -> float:
        return sum(tree_cpu_seconds(p.pid) for p in self.processes)


def hub_environment(tree: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of a hub run from `tree` (this checkout or a baseline worktree)."""
    return {**os.environ, **env, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}


def upgrade_database(tree: Path, env: dict[str, str], log: Path) -> None:
    """`blackwidow db upgrade`: PostgreSQL needs it, and so does SQLite served by gunicorn
    (only `blackwidow hub` migrates SQLite by itself)."""
    with open(log, "ab") as out:
        subprocess.run(
            [str(PYTHON), "-m", "blackwidow", "db", "upgrade"],
            env=hub_environment(tree, env),
            cwd=tree,
            stdout=out,
            stderr=out,
            check=True,
            timeout=120,
        )


def start_hub(processes: Processes, tree: Path, env: dict[str, str], work: Path, n: int) -> Hub:
    """A `blackwidow hub` process on 127.0.0.1, port 0; its URL is the first line it prints."""
    out_path, log = work / f"hub{n}.out", work / f"hub{n}.log"
    command = [str(PYTHON), "-m", "blackwidow", "hub", "--host", "127.0.0.1", "--port", "0"]
    with open(out_path, "wb") as out:
        process = processes.start(
            command, log, stdout=out, env=hub_environment(tree, env), cwd=work
        )

    def url() -> str:
        lines = out_path.read_text().splitlines()
        return lines[0].strip() if lines and lines[0].startswith("http") else ""

    def up() -> bool:
        if process.poll() is not None:
            raise Unsettled(f"hub exited with status {process.returncode}: see {log}")
        return bool(url())

    wait_for("hub start", up, 60)
    return Hub([process], url(), log)


def start_procfile_hub(
    processes: Processes, tree: Path, env: dict[str, str], work: Path, n: int, workers: int
) -> Hub:
    """The Procfile's web (gunicorn, `workers` workers of 4 threads, no monitor in them) and
    its monitor process, on 127.0.0.1."""
    log, port = work / f"hub{n}.log", free_port()
    url = f"http://127.0.0.1:{port}"
    environment = hub_environment(tree, env)
    web = processes.start(
        [
            *(str(PYTHON), "-m", "gunicorn", "-c", "python:blackwidow.gunicorn_conf"),
            *("--workers", str(workers), "--threads", "4", "--bind", f"127.0.0.1:{port}"),
            "blackwidow.wsgi:hub_app(monitor=False)",
        ],
        log,
        stdout=subprocess.DEVNULL,
        env=environment,
        cwd=work,
    )
    monitor = processes.start(
        [str(PYTHON), "-m", "blackwidow", "monitor"],
        log,
        stdout=subprocess.DEVNULL,
        env=environment,
        cwd=work,
    )
    hub = Hub([web, monitor], url, log)

    def up() -> bool:
        if (gone := hub.exited()) is not None:
            raise Unsettled(f"hub exited with status {gone.returncode}: see {log}")
        try:
            return requests.get(f"{url}/healthz", timeout=2).ok
        except requests.RequestException:
            return False

    wait_for("hub start", up, 60)
    return hub


class SimulatedNodes:
    """One `bench.simulated_nodes` process, driven over its stdin and stdout."""

    def __init__(self, processes: Processes, hub_url: str, count: int, env: dict, log: Path):
        command = [str(PYTHON), "-m", "bench.simulated_nodes", "--hub", hub_url]
        self.process = processes.start(
            [*command, "--nodes", str(count)],
            log,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **env, "PYTHONPATH": str(REPO)},
            cwd=REPO,
            text=True,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        self.urls: list[str] = self._answer(180)["nodes"]

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)

    def _answer(self, timeout: float) -> dict[str, Any]:
        try:
            return json.loads(self._lines.get(timeout=timeout))
        except queue.Empty:
            status = self.process.poll()
            raise Unsettled(f"simulated nodes: no answer in {timeout:.0f}s ({status=})") from None

    def stats(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write("stats\n")
            self.process.stdin.flush()
        except OSError:  # a broken pipe: the process is gone
            status = self.process.wait(5)
            raise Unsettled(f"simulated nodes exited with status {status}") from None
        return self._answer(60)

    def kill(self) -> None:
        """SIGKILL: the nodes vanish, their sockets with them, as when a machine's process dies."""
        self.process.kill()
        self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A throwaway PostgreSQL on loopback (the suite's own), stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="bench-postgres-") as run_dir:
        server = Postgres(Path(run_dir), free_port())
        server.start()
        try:
            server.wait_ready(60)
            yield server
        finally:
            server.stop()


def fresh_database(server: Postgres, name: str) -> str:
    """A new, empty database on `server`; its SQLAlchemy URL."""
    address = {"host": server.host, "port": server.port, "user": "postgres", "dbname": "postgres"}
    with psycopg.connect(**address, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return server.url.rsplit("/", 1)[0] + f"/{name}"


@contextmanager
def baseline_tree(ref: str) -> Iterator[Path]:
    """A detached worktree of `ref` in a temp dir, removed at the end."""
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as parent:
        path = Path(parent) / "tree"
        git = ["git", "-C", str(REPO), "worktree"]
        subprocess.run([*git, "add", "--detach", str(path), ref], check=True, capture_output=True)
        try:
            yield path
        finally:
            subprocess.run([*git, "remove", "--force", str(path)], capture_output=True)


def raise_on_sigterm() -> None:
    """A SIGTERM ends the run like Ctrl-C does, so `finally` blocks stop the children."""

    def _interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _interrupt)
    sys.stdout.flush()
