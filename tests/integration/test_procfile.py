"""The Procfile's four lines, read from the Procfile and run as a process supervisor runs
them: each through the shell, with the variables a deployment sets beside it
(docs/operations.md). Release migrates a fresh database, web (gunicorn, several workers)
becomes ready, the monitor process (and no web worker) leads the monitor, and the node spawn
starts registers with it. With BLACKWIDOW_LOG_FORMAT=json,
every line each of them writes on stderr, gunicorn's own included, is one JSON object."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

import requests

from tests.support import wait_until

ROOT = Path(__file__).resolve().parents[2]
JSON_FIELDS = {"time", "level", "logger", "message"}


def procfile() -> dict[str, str]:
    """Each process's command, by name, as the Procfile says it."""
    lines = (ROOT / "Procfile").read_text().splitlines()
    named = (line.split(":", 1) for line in lines if line.strip() and not line.startswith("#"))
    return {name.strip(): command.strip() for name, command in named}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def deployment(tmp_path: Path) -> dict[str, str]:
    """The environment a deployment sets beside the Procfile, on loopback ports."""
    port, spawn_port = free_port(), free_port()
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PORT": str(port),
        "SPAWN_PORT": str(spawn_port),
        "SPAWN_URL": f"http://127.0.0.1:{spawn_port}",
        "BLACKWIDOW_HUB_URL": f"http://127.0.0.1:{port}",
        "BLACKWIDOW_CLUSTER_SECRET": secrets.token_urlsafe(16),
        "BLACKWIDOW_DATABASE_URL": f"sqlite:///{tmp_path / 'hub.db'}",
        "BLACKWIDOW_STORE": f"sqlite:///{tmp_path / 'items.db'}",
        "BLACKWIDOW_OUTBOX_DIR": str(tmp_path / "outbox"),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "BLACKWIDOW_LOG_FORMAT": "json",
    }


def start(command: str, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """The line run as honcho or foreman run it (sh -c), in a session of its own."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            ["sh", "-c", f"exec {command}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM to the process's whole session (gunicorn's workers too); SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            return process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    return process.wait()


def answer(url: str) -> requests.Response | None:
    """The answer when it is a 2xx; None while the server is not bound or not ready."""
    try:
        response = requests.get(url, timeout=5)
    except requests.RequestException:  # not bound yet, or a worker still booting
        return None
    return response if response.ok else None


def json_lines(name: str, text: str) -> list[dict[str, object]]:
    """Every line of a process's stderr, each of which must be a JSON log object."""
    records = []
    for line in filter(str.strip, text.splitlines()):
        try:
            records.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"{name}: not a JSON line: {line!r}") from None
    assert all(record.keys() >= JSON_FIELDS for record in records), name
    return records


def test_the_procfile_releases_serves_monitors_and_spawns_a_node_that_registers(tmp_path):
    lines, env = procfile(), deployment(tmp_path)
    assert set(lines) == {"release", "web", "monitor", "spawn"}
    release = subprocess.run(
        ["sh", "-c", lines["release"]], env=env, capture_output=True, text=True, timeout=60
    )
    assert release.returncode == 0, release.stderr
    hub = env["BLACKWIDOW_HUB_URL"]

    def active_nodes() -> int:
        count = answer(f"{hub}/api/v1/nodes/count")
        return count.json()["active"] if count else 0

    def leader() -> str | None:
        health = answer(f"{hub}/api/v1/health")
        return health.json()["monitor"]["holder"] if health else None

    web = start(lines["web"], env, tmp_path / "web.log")
    monitor = node = None
    try:
        ready = wait_until(lambda: answer(f"{hub}/readyz"), timeout=60, what="web ready")
        assert ready.json()["status"] == "ready"
        monitor = start(lines["monitor"], env, tmp_path / "monitor.log")
        holder = wait_until(leader, timeout=60, what="a monitor leading")
        assert holder.split(":")[1] == str(monitor.pid)  # web's workers run no monitor
        node = start(lines["spawn"], env, tmp_path / "spawn.log")
        wait_until(lambda: active_nodes() == 1, timeout=60, what="the node registered")
    finally:
        started = (node, monitor, web)
        statuses = [stop(process) for process in started if process is not None]
    assert statuses == [0, 0, 0]
    web_log = json_lines("web", (tmp_path / "web.log").read_text())
    assert any(record["logger"] == "gunicorn.error" for record in web_log)  # gunicorn's own
    monitor_log = json_lines("monitor", (tmp_path / "monitor.log").read_text())
    assert any(record["logger"] == "blackwidow.monitor.loop" for record in monitor_log)
    assert json_lines("spawn", (tmp_path / "spawn.log").read_text())
    assert json_lines("release", release.stderr)
