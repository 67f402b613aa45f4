"""Misconfiguration said out loud, by real processes: a node with a wrong advertise URL or a
wrong cluster secret is refused with the reason, says it once in its log however often it
retries, and is not ready; a misspelt variable is warned of at start; `postgres://` runs, an
unknown scheme stops the start in one line with status 2, as a store that cannot be opened
does on the hub, a node and web."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.component.scratch_databases import ScratchDatabases
from tests.integration.conftest import Cluster
from tests.support import wait_until


def closed_port() -> int:
    """A loopback port nothing listens on: bound, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def refused_registrations(c: Cluster) -> int:
    """Registrations the hub refused (401 or 422), from its own request figures."""
    text = requests.get(f"{c.hub_url}/metrics", timeout=10).text
    return sum(
        int(sample.value)
        for family in text_string_to_metric_families(text)
        if family.name == "blackwidow_http_request_duration_seconds"
        for sample in family.samples
        if sample.name.endswith("_count")
        and sample.labels.get("method") == "POST"
        and sample.labels.get("route", "").endswith("/api/v1/nodes")
        and sample.labels.get("status") in ("401", "422")
    )


def readiness(url: str) -> tuple[int, Any]:
    answer = requests.get(f"{url}/readyz", timeout=5)
    return answer.status_code, answer.json()


def test_a_misconfigured_node_is_told_why_once_and_is_not_ready(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(0)
    wrong_url = f"http://127.0.0.1:{closed_port()}"
    lost = c.add_node(advertise_url=wrong_url)
    stranger = c.add_node(BLACKWIDOW_CLUSTER_SECRET="not-the-cluster-secret")
    # each tried at least three times: both retry with backoff (0.5 s, 1 s, 2 s, ...)
    wait_until(lambda: refused_registrations(c) >= 6, timeout=30, what="refused retries")

    status, answer = readiness(lost.url)
    assert status == 503 and answer["status"] == "not_ready"
    [reason] = answer["reasons"]
    assert reason.startswith(
        "not registered with the hub: registration refused: url: the hub could not reach"
        f" this node at {wrong_url}/healthz ("
    )
    assert readiness(stranger.url) == (
        503,
        {
            "status": "not_ready",
            "role": "node",
            "reasons": [
                "not registered with the hub: registration refused:"
                " cluster secret does not match the hub's"
            ],
        },
    )
    lost_log, stranger_log = (n.log_path.read_text() for n in (lost, stranger))
    assert lost_log.count("registration refused: url: the hub could not reach") == 1
    assert stranger_log.count("registration refused: cluster secret does not match the hub's") == 1
    assert "--advertise-url" in lost_log
    # nothing registered, so nothing to declare dead a few seconds later
    assert c.call("GET", "/api/v1/nodes", c.admin_token).json() == []
    assert requests.get(f"{lost.url}/healthz", timeout=5).json()["registered"] is False


def _blackwidow(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "blackwidow", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def scratch_postgres(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL database of this test's own, dropped after it."""
    databases = ScratchDatabases(postgres_url)
    url = databases.create()
    yield url
    databases.drop(url)
    databases.close()


def test_the_start_warns_of_a_misspelt_variable_and_takes_postgres_urls(
    tmp_path, scratch_postgres: str
) -> None:
    heroku_style = scratch_postgres.replace("postgresql+psycopg://", "postgres://")
    assert heroku_style.startswith("postgres://")
    ran = _blackwidow(
        *("db", "upgrade", "--store", f"sqlite:///{tmp_path / 'items.db'}"),
        BLACKWIDOW_DATABASE_URL=heroku_style,
        BLACKWIDOW_POLL_INTERVALL="5",
    )
    assert ran.returncode == 0, ran.stderr
    assert (
        "unknown variable ignored variable=BLACKWIDOW_POLL_INTERVALL"
        " did_you_mean=BLACKWIDOW_POLL_INTERVAL"
    ) in ran.stderr
    assert "postgresql+psycopg://" in ran.stdout  # `database upgraded: <its URL>`

    refused = _blackwidow("db", "upgrade", BLACKWIDOW_DATABASE_URL="mysql://u:pw@db/hub")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "blackwidow: cannot start; fix the environment:",
        "BLACKWIDOW_DATABASE_URL: expected sqlite:///PATH or"
        " postgresql://USER:PASSWORD@HOST/DATABASE, got a mysql:// URL",
    ]


@pytest.mark.parametrize("entry", ["hub", "spawn", "web"])
def test_a_store_that_cannot_be_opened_stops_the_start_in_one_line(tmp_path, entry: str) -> None:
    """The hub, a node and gunicorn's web each refuse a store file that is a directory: one
    line naming BLACKWIDOW_STORE and the cause, status 2, and no database made meanwhile."""
    (tmp_path / "items.db").mkdir()
    env = {
        **os.environ,
        "BLACKWIDOW_STORE": f"sqlite:///{tmp_path / 'items.db'}",
        "BLACKWIDOW_DATABASE_URL": f"sqlite:///{tmp_path / 'hub.db'}",
        "BLACKWIDOW_CLUSTER_SECRET": "a secret",
    }
    command = {
        "hub": ["-m", "blackwidow", "hub", "--port", "0"],
        "spawn": ["-m", "blackwidow", "spawn", "--hub", f"http://127.0.0.1:{closed_port()}"],
        "web": [
            *("-m", "gunicorn", "-c", "python:blackwidow.gunicorn_conf"),
            *("--bind", "127.0.0.1:0", "blackwidow.wsgi:hub_app(monitor=False)"),
        ],
    }[entry]
    ran = subprocess.run(
        [sys.executable, *command], env=env, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 2
    assert ran.stderr.splitlines() == [
        f"blackwidow: cannot start: BLACKWIDOW_STORE: cannot open {tmp_path / 'items.db'}:"
        " it is a directory, not a file"
    ]
    assert not (tmp_path / "hub.db").exists()
