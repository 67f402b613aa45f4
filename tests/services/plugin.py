"""Pytest fixtures for real servers on 127.0.0.1: `cassandra_service` (port 19042, storage 17000),
`redis_url` (16379) and `postgres_url` (15432).

A server starts as soon as collection shows a test that uses it, so its start-up overlaps the
tests that run first; the fixture only waits for it to answer. A server already answering on its
port, such as one an earlier run left behind, is used as it is and never stopped. Servers started
here are stopped at the end of the session and their run dir removed, unless the environment has
BLACKWIDOW_KEEP_SERVICES=1: then they keep running, with their run dir, and the next run reuses
them at once. `make services` installs what they need.

Under pytest-xdist (`-n`), the controller starts every server before the workers exist and
stops them at its end; each worker finds them answering and uses them, and never stops one,
since the other workers may still be using it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.services.cassandra import Cassandra, CassandraEndpoint
from tests.services.launch import Launch, S
from tests.services.postgres import Postgres
from tests.services.redis import Redis
from tests.services.server import Service

FIXTURES: dict[str, type[Service]] = {
    "cassandra_service": Cassandra,
    "redis_url": Redis,
    "postgres_url": Postgres,
}


class Services:
    """This session's servers, each launched at most once, with run dirs in one temp dir."""

    def __init__(self) -> None:
        self.launches: dict[type[Service], Launch[Any]] = {}
        self._root: Path | None = None
        self.kept: Path | None = None

    def launch(self, kind: type[S]) -> Launch[S]:
        if kind not in self.launches:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="blackwidow-services-"))
                self._root.chmod(0o755)  # postgres runs as its own user when we are root
            self.launches[kind] = Launch(kind(self._root / kind.name))
        return self.launches[kind]

    def finish(self, keep: bool) -> None:
        """Stop what this session started and remove the run dirs, or keep both running."""
        if keep and any(launch.started_here() for launch in self.launches.values()):
            self.kept = self._root
            return
        for launch in self.launches.values():
            launch.stop()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)


KEY = pytest.StashKey[Services]()


def _xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _xdist_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not _xdist_worker(config)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[KEY] = Services()
    config.addinivalue_line(
        "markers",
        "services(*fixtures): the test reaches these server fixtures through"
        " request.getfixturevalue, so start them early as if it named them",
    )
    if _xdist_controller(config) and not config.option.collectonly:
        for kind in FIXTURES.values():  # it collects nothing, so it cannot tell which are needed
            config.stash[KEY].launch(kind).begin()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Begin starting every server a collected test needs, before the first test runs."""
    if session.config.option.collectonly:
        return
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    marks = (mark for item in session.items for mark in item.iter_markers("services"))
    needed |= {name for mark in marks for name in mark.args}
    services = session.config.stash[KEY]
    for fixture, kind in FIXTURES.items():
        if fixture in needed:
            services.launch(kind).begin()


def pytest_sessionfinish(session: pytest.Session) -> None:
    keep = os.environ.get("BLACKWIDOW_KEEP_SERVICES") == "1"
    session.config.stash[KEY].finish(keep or _xdist_worker(session.config))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    services = config.stash[KEY]
    if services.launches:
        lines = ", ".join(launch.describe() for launch in services.launches.values())
        terminalreporter.write_line(f"services: {lines}")
    if services.kept is not None:
        kept = f"left running (BLACKWIDOW_KEEP_SERVICES=1), run dirs in {services.kept}"
        terminalreporter.write_line(f"services: {kept}")


def _ready(request: pytest.FixtureRequest, kind: type[S]) -> S:
    return request.config.stash[KEY].launch(kind).ready()


@pytest.fixture(scope="session")
def cassandra_service(request: pytest.FixtureRequest) -> CassandraEndpoint:
    """Host, port and `contact_points` ("127.0.0.1:19042") of a single-node Cassandra 5."""
    return _ready(request, Cassandra).endpoint


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest) -> str:
    """redis://127.0.0.1:16379/0; under pytest-xdist a database per worker (gw0: 1, gw1: 2,
    ...), so that no two tests running at once see each other's streams."""
    url = _ready(request, Redis).url
    if not _xdist_worker(request.config):
        return url
    worker = int(request.config.workerinput["workerid"].removeprefix("gw"))  # type: ignore[attr-defined]
    return f"{url.rsplit('/', 1)[0]}/{1 + worker}"


@pytest.fixture(scope="session")
def postgres_url(request: pytest.FixtureRequest) -> str:
    """postgresql+psycopg://postgres@127.0.0.1:15432/postgres (trust auth, no fsync)."""
    return _ready(request, Postgres).url
