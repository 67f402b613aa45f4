"""Plugins and fixtures for every test tier; servers start only for the tests that ask for them."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from blackwidow.core.store import upgrade_store
from blackwidow.core.store.cassandra import config as cassandra_config
from blackwidow.core.store.cassandra.store import make_cluster
from tests import summary

pytest_plugins = ["tests.services.plugin"]


class _LoggersListedWhole(dict[str, Any]):
    """The logging registry, whose values are listed in one step. pytest's log capture walks
    every logger at each test's set-up, while the threads that start the test servers (and
    the clients they connect with) may register a logger of their own: a plain dict then
    fails the walk with "dictionary changed size during iteration", and the session with it."""

    def values(self) -> list[Any]:  # type: ignore[override]
        return list(super().values())


logging.root.manager.loggerDict = _LoggersListedWhole(logging.root.manager.loggerDict)


def pytest_configure(config: pytest.Config) -> None:
    """Every process a test starts with default paths keeps its files in a data directory of
    this run's own (each worker's), never in the user's: runs and workers stay apart."""
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="blackwidow-test-data-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ["XDG_DATA_HOME"], ignore_errors=True)


@pytest.fixture(scope="session")
def cassandra_store_url(cassandra_service: Any) -> Iterator[str]:
    """One keyspace per session, made by `blackwidow db upgrade`'s code path.

    Schema changes take seconds in Cassandra, so tests share it and keep apart by using
    crawler ids of their own (see `crawler_ids`).
    """
    keyspace = f"bw_test_{uuid.uuid4().hex[:12]}"
    url = f"cassandra://{cassandra_service.contact_points}/{keyspace}?consistency=ONE&search=on"
    upgrade_store(url)
    yield url
    cluster = make_cluster(cassandra_config.parse(url.removeprefix("cassandra://")))
    try:
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
    finally:
        cluster.shutdown()


@pytest.fixture
def crawler_ids() -> tuple[int, int, int]:
    """Three crawler ids no other test uses, even in a shared keyspace."""
    base = uuid.uuid4().int % 2**40 * 10
    return base + 1, base + 2, base + 3


@pytest.hookimpl(trylast=True)  # after the tiers have marked theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist the slow scenarios go out first, so that no worker is left running
    one alone at the end."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker
        summary.hand_over(workeroutput)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook
def pytest_testnodedown(node: Any) -> None:
    """A pytest-xdist worker's end, in the controller."""
    summary.take_over(node.workeroutput)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    summary.write(terminalreporter)
