"""A hub cut off from PostgreSQL answers 503 with Retry-After within its database timeout,
never hangs until the network heals, and answers as before once it has.

The cut is real: the kernel's packet filter drops every packet to and from the port of a relay
that carries only this hub's connections (nftables, as root), so the hub's TCP stack sees
what it sees when a network between hosts fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import make_url

from blackwidow.app import create_app
from tests.component.conftest import ADMIN, bearer, hub_settings
from tests.servers.tcp_relay import TcpRelay
from tests.support import wait_until

TABLE = f"bw_dbcut_{os.getpid()}"


class Cut:
    """An nftables table of this test's own that drops a loopback port's traffic."""

    def __init__(self, port: int) -> None:
        self._port = port

    def __enter__(self) -> Cut:
        rules = (
            f"table inet {TABLE} {{\n chain out {{\n  type filter hook output priority 0;\n"
            f"  tcp dport {self._port} drop\n  tcp sport {self._port} drop\n }}\n}}\n"
        )
        subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        subprocess.run(["nft", "delete", "table", "inet", TABLE], check=True)


@pytest.fixture
def relayed_database(database_url: str) -> Iterator[str]:
    """The URL of a migrated PostgreSQL database, reached through a relay of its own."""
    if os.geteuid() != 0 or shutil.which("nft") is None:
        pytest.fail("cutting a network path needs root and nftables (tests/services/install)")
    url = make_url(database_url)
    with TcpRelay(url.port or 5432, url.host or "127.0.0.1") as relay:
        yield url.set(port=relay.port).render_as_string(hide_password=False)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_hub_cut_from_its_database_answers_503_and_recovers(
    relayed_database: str, tmp_path: Path
) -> None:
    app = create_app(hub_settings(relayed_database, tmp_path, database_timeout=1.0))
    client = app.test_client()
    assert client.get("/api/v1/users", headers=bearer(ADMIN)).status_code == 200
    answers: list = []
    with Cut(int(make_url(relayed_database).port or 0)):
        asking = threading.Thread(
            target=lambda: answers.append(client.get("/api/v1/users", headers=bearer(ADMIN)))
        )
        asking.start()
        wait_until(lambda: answers, timeout=30, what="an answer while cut off")
        (answer,) = answers
        assert answer.status_code == 503, answer.json
        assert answer.json["error"]["code"] == "database_unavailable"
        assert int(answer.headers["Retry-After"]) >= 1
    wait_until(
        lambda: client.get("/api/v1/users", headers=bearer(ADMIN)).status_code == 200,
        what="answers after the heal",
    )
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()
