"""Component fixtures: the real hub app on a real, migrated database, SQLite and PostgreSQL.

Every test that takes `hub_app` (or `database_url`) runs once per back end: `[sqlite]` and
`[postgresql]`. Each test's database starts as a template migrated once per session left it:
a copy of it on SQLite; on PostgreSQL, one copy per session that each test finds emptied.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.app import create_app
from blackwidow.core.node_protocol import Shard
from blackwidow.core.settings import Settings
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.demo.feed_server import FeedServer
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.reconcile import Reconciler
from blackwidow.monitor.routing import Router
from blackwidow.node_client import NodeClient
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.component.scratch_databases import ReusedDatabase, ScratchDatabases
from tests.support import served

ADMIN = "admin-token-for-tests"
SECRET = "cluster-secret-for-tests"
SQL_BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to head once, for tests to copy.

    Alembic's connections are closed when it is done, so the file holds the whole database.
    """
    path = tmp_path_factory.mktemp("template") / "hub.db"
    db.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def scratch_databases(postgres_url: str) -> Iterator[ScratchDatabases]:
    databases = ScratchDatabases(postgres_url)
    yield databases
    databases.close()


@pytest.fixture(scope="session")
def migrated_template(scratch_databases: ScratchDatabases) -> Iterator[str]:
    """A PostgreSQL database migrated to head once, for tests to copy."""
    url = scratch_databases.create()
    db.upgrade(url)
    yield url
    scratch_databases.drop(url)


@pytest.fixture(scope="session")
def reused_database(
    scratch_databases: ScratchDatabases, migrated_template: str
) -> Iterator[ReusedDatabase]:
    """The PostgreSQL database the tests that want a migrated one take in turn."""
    database = ReusedDatabase(scratch_databases, migrated_template)
    yield database
    database.close()


def _database(request: pytest.FixtureRequest, tmp_path: Path, migrated: bool) -> Iterator[str]:
    """A database for one test alone on the back end `request.param` names, as that back
    end's template is when `migrated`, else one no migration has touched.

    PostgreSQL is started only when a test asks for it, so `-k sqlite` runs without it.
    """
    if request.param == "sqlite":
        path = tmp_path / "hub.db"
        if migrated:
            shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    if migrated:
        reused: ReusedDatabase = request.getfixturevalue("reused_database")
        yield reused.emptied()
        reused.let_go()
        return
    databases: ScratchDatabases = request.getfixturevalue("scratch_databases")
    url = databases.create()
    yield url
    databases.drop(url)


@pytest.fixture(params=SQL_BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a database migrated to head."""
    yield from _database(request, tmp_path, migrated=True)


@pytest.fixture(params=SQL_BACKENDS)
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a database no migration has touched."""
    yield from _database(request, tmp_path, migrated=False)


def hub_settings(database_url: str, tmp_path: Path, **changes: Any) -> Settings:
    """A hub's settings on this test's database and a store in its directory."""
    defaults: dict[str, Any] = {"admin_token": ADMIN, "cluster_secret": SECRET}
    return Settings(
        database_url=database_url,
        store_url=f"sqlite:///{tmp_path / 'items.db'}",
        **(defaults | changes),
    )


@pytest.fixture
def hub_app(database_url: str, tmp_path: Path) -> Iterator[Flask]:
    """The hub on this test's own database, once per SQL back end."""
    settings = hub_settings(database_url, tmp_path)
    app = create_app(settings)
    yield app
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()  # close pooled connections before the database is dropped


@pytest.fixture
def client(hub_app: Flask) -> FlaskClient:
    return hub_app.test_client()


@pytest.fixture
def sessions(hub_app: Flask) -> sessionmaker[Session]:
    """The hub's own sessions, for tests that set up or read what the monitor records."""
    return hub_app.extensions["blackwidow"].sessions


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def make_user(client: FlaskClient) -> Callable[..., dict[str, Any]]:
    def _make(name: str = "ana", item_limit: int | None = None) -> dict[str, Any]:
        response = client.post(
            "/api/v1/users", json={"name": name, "item_limit": item_limit}, headers=bearer(ADMIN)
        )
        assert response.status_code == 201, response.json
        return response.json

    return _make


@pytest.fixture
def feeds() -> Iterator[FeedServer]:
    """The sample-feed server in this process, on a loopback port."""
    server = FeedServer()
    server.start()
    yield server
    server.stop()


class ServedNodes:
    """Real node apps on loopback, one per call, each on a port of its own (or the one given:
    a new process at a stopped node's address): its URL. The hub calls a registering node
    back (GET /healthz) before it takes the registration, so a URL a test registers must
    have a node there."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self._running: dict[str, ExitStack] = {}

    def __call__(self, port: int = 0) -> str:
        fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), deadline=5.0)
        pool = DataSourcePool(opener(SourceContext(fetcher, 60.0)), self._store)
        app = create_node_app(NodeState(pool, clock=time.monotonic), SECRET)
        stack = ExitStack()
        url = stack.enter_context(served(app, "served-node", port))
        self._running[url] = stack
        return url

    def stop(self, url: str) -> None:
        """The node's process is gone: calls to its port are refused at once."""
        self._running.pop(url).close()

    def close(self) -> None:
        for url in list(self._running):
            self.stop(url)


@pytest.fixture
def serve_node(tmp_path: Path) -> Iterator[ServedNodes]:
    store = SqliteStore(str(tmp_path / "served-nodes-items.db"))
    nodes = ServedNodes(store)
    yield nodes
    nodes.close()
    store.close()


def make_reconciler(
    sessions: sessionmaker[Session], memory: ShardMemory, routing: str = "modulo", **options: Any
) -> Reconciler:
    """The monitor's reconcile half of one unsharded leader on a test's database; `options`
    as Reconciler takes them (a wall clock, a fence)."""
    return Reconciler(
        sessions,
        NodeClient("cluster-secret", timeout=0.5),
        memory,
        Router(routing),
        30.0,
        Shard(),
        alerts=AlertOutbox(cluster_hook=False),
        **options,
    )
