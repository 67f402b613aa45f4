"""The hub as production runs it (gunicorn, several workers), and the command line itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import requests

from tests.integration.conftest import Cluster
from tests.support import wait_until


@pytest.mark.slow
def test_gunicorn_workers_run_exactly_one_monitor(tmp_path):
    c = Cluster(tmp_path, {})
    try:
        hub = c.start_gunicorn_hub(3)
        c.add_node()
        c.wait_for_nodes(1)
        token = c.user()
        crawler = c.crawler(token, [c.feed("gunicorn", items=4)])
        wait_until(lambda: len(c.items(token, crawler["id"])) == 4, what="items")
        wait_until(
            lambda: c.call("GET", "/api/v1/health").json()["monitor"]["leader"], what="leader"
        )
        assert hub.log_path.read_text().count("monitor leading") == 1
    finally:
        c.stop()


def _blackwidow(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "blackwidow", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bad_environment_exits_with_status_2_naming_every_bad_variable():
    result = _blackwidow(
        "hub", env={"BLACKWIDOW_POLL_INTERVAL": "soon", "BLACKWIDOW_ROUTING": "random"}
    )
    assert result.returncode == 2
    assert "BLACKWIDOW_POLL_INTERVAL: Not a valid number." in result.stderr
    assert "BLACKWIDOW_ROUTING: Must be one of: modulo, rendezvous, weighted." in result.stderr


GUNICORN = (sys.executable, "-m", "gunicorn", "-b", "127.0.0.1:0")
SERVERS = {
    "hub": ((sys.executable, "-m", "blackwidow", "hub", "--port", "0"), 2),
    "spawn": ((sys.executable, "-m", "blackwidow", "spawn", "--hub", "http://127.0.0.1:9"), 2),
    # the Procfile's web, and gunicorn without its config: its worker fails to load the app,
    # which stops gunicorn rather than booting the worker again and again
    "web": ((*GUNICORN, "-c", "python:blackwidow.gunicorn_conf", "blackwidow.wsgi:app"), 2),
    "wsgi": ((*GUNICORN, "blackwidow.wsgi:app"), 4),
}


@pytest.mark.parametrize("server", SERVERS)
def test_every_server_refuses_to_start_without_a_cluster_secret_with_one_message(tmp_path, server):
    command, status = SERVERS[server]
    env = {k: v for k, v in os.environ.items() if k != "BLACKWIDOW_CLUSTER_SECRET"}
    env["BLACKWIDOW_DATABASE_URL"] = f"sqlite:///{tmp_path / 'h.db'}"
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == status, result.stderr
    message = "blackwidow: cannot start; fix the environment:\n"
    assert f"{message}BLACKWIDOW_CLUSTER_SECRET: must be set" in result.stderr


def test_db_upgrade_creates_the_schema(tmp_path):
    url, store = f"sqlite:///{tmp_path / 'fresh.db'}", f"sqlite:///{tmp_path / 'items.db'}"
    first = _blackwidow("db", "upgrade", "--db", url, "--store", store)
    again = _blackwidow("db", "upgrade", "--db", url, "--store", store)
    assert first.returncode == again.returncode == 0, first.stderr
    assert (tmp_path / "fresh.db").stat().st_size > 0


def test_a_node_stops_on_sigterm_while_a_hub_holds_a_kept_alive_connection(tmp_path):
    c = Cluster(tmp_path, {})
    node = c._start("node", "blackwidow", "spawn", "--hub", "http://127.0.0.1:9", "--port", "0")
    try:
        kept = requests.Session()  # as the hub keeps one connection open to every node
        assert kept.get(f"{node.url}/healthz", timeout=5).ok
        node.process.send_signal(signal.SIGTERM)
        assert node.process.wait(timeout=8) == 0
    finally:
        c.stop()
        node.stop()
