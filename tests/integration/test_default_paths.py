"""On the default environment a hub and a node keep their files in the user's data directory
and write nothing into the working directory, which may be a checkout."""

from __future__ import annotations

import socket
import sqlite3

import requests

from blackwidow.demo import processes
from tests.support import wait_until

PATH_VARIABLES = ("BLACKWIDOW_DATABASE_URL", "BLACKWIDOW_STORE", "BLACKWIDOW_OUTBOX_DIR")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ready(url: str) -> bool:
    return requests.get(f"{url}/readyz", timeout=5).status_code == 200


def test_a_hub_and_a_node_on_defaults_write_nothing_into_the_working_directory(
    tmp_path, monkeypatch
):
    checkout, logs, data = tmp_path / "checkout", tmp_path / "logs", tmp_path / "data"
    checkout.mkdir()
    logs.mkdir()
    for name in PATH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.chdir(checkout)  # the processes start here
    # a node on a fixed port keeps a run ledger; with a queue, a spool too (opening one
    # does not connect, so nothing need listen there)
    env = {
        "BLACKWIDOW_CLUSTER_SECRET": "secret",
        "BLACKWIDOW_REDIS_URL": f"redis://127.0.0.1:{_free_port()}/0",
    }
    port = _free_port()
    started: list[processes.Running] = []
    try:
        started.append(processes.start("hub", ["blackwidow", "hub", "--port", "0"], env, logs))
        spawn = ["blackwidow", "spawn", "--hub", started[0].url, "--port", str(port)]
        started.append(processes.start("node", spawn, env, logs))
        # its files open once its registration named the cluster, before it is ready
        wait_until(lambda: ready(started[1].url), what="the node registered")

        home = data / "blackwidow"
        assert {path.name for path in home.glob("*.db")} == {"hub.db", "items.db"}
        with sqlite3.connect(home / "hub.db") as hub_db:
            (cluster,) = hub_db.execute("SELECT cluster_id FROM cluster_identity").fetchone()
        node_files = {path.name for path in (home / "outbox").glob("*.db")}
        assert node_files == {
            f"ledger-127.0.0.1-{port}@{cluster}.db",
            f"outbox-127.0.0.1-{port}@{cluster}.db",
        }
        assert list(checkout.iterdir()) == []
    finally:
        for process in reversed(started):
            process.stop()
    assert list(checkout.iterdir()) == []
