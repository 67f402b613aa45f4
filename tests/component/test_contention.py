"""Contention on a real database: a write the database cannot let through in time is a 503
with Retry-After in the one error shape, never a 500; a quick refusal is tried again; many
clients creating crawlers at once, while another transaction keeps taking the write lock,
all succeed."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.exc import OperationalError

from blackwidow import db
from blackwidow.api.contention import PAUSE, RETRIES, retrying
from blackwidow.app import create_app
from blackwidow.core.errors import ApiError
from blackwidow.core.settings import Settings
from blackwidow.models import Crawler, CrawlerChange
from tests.component.conftest import ADMIN, bearer, hub_settings
from tests.support import served

BUSY_TIMEOUT = 0.3  # seconds
# what no crawler write gets past on PostgreSQL: each writes a crawler change
LOCK_CRAWLERS = text("LOCK TABLE crawlers, crawler_changes IN SHARE ROW EXCLUSIVE MODE")


def rss(n: int = 0) -> dict[str, Any]:
    return {"name": f"c{n}", "source": "rss", "query": {"feeds": [f"https://e{n % 50}.example/f"]}}


def make_app(database_url: str, tmp_path: Path, busy_timeout: float) -> Flask:
    settings = hub_settings(database_url, tmp_path, database_busy_timeout=busy_timeout)
    return create_app(settings)


@pytest.fixture
def busy_app(database_url: str, tmp_path: Path) -> Iterator[Flask]:
    """The hub with a short busy timeout, so a held lock is felt within the test."""
    app = make_app(database_url, tmp_path, BUSY_TIMEOUT)
    yield app
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()


def user_token(app: Flask, name: str = "ana") -> str:
    response = app.test_client().post("/api/v1/users", json={"name": name}, headers=bearer(ADMIN))
    assert response.status_code == 201, response.json
    return response.json["token"]


@contextmanager
def write_lock_held(database_url: str) -> Iterator[None]:
    """Another connection holds the lock every crawler write needs, until the block ends:
    SQLite's write lock (BEGIN IMMEDIATE), or PostgreSQL's lock on the crawlers table."""
    if database_url.startswith("sqlite"):
        connection = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")  # as the hub leaves it
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            connection.execute("ROLLBACK")
            connection.close()
        return
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection, connection.begin():
            connection.execute(LOCK_CRAWLERS)
            yield
    finally:
        engine.dispose()


def counted(app: Flask) -> tuple[int, int]:
    """Crawlers and crawler changes in the database."""
    with app.extensions["blackwidow"].sessions() as session:
        crawlers = session.scalar(select(func.count()).select_from(Crawler))
        changes = session.scalar(select(func.count()).select_from(CrawlerChange))
    return crawlers or 0, changes or 0


def test_a_create_that_cannot_get_the_lock_in_time_is_a_503_with_retry_after(
    busy_app, database_url
):
    client = busy_app.test_client()
    token = user_token(busy_app)
    with write_lock_held(database_url):
        started = time.monotonic()
        refused = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token))
        waited = time.monotonic() - started
        # reads are not held up by a writer
        assert client.get("/api/v1/crawlers", headers=bearer(token)).status_code == 200
    assert refused.status_code == 503, refused.json
    assert refused.headers["Retry-After"] == "1"
    assert refused.json == {
        "error": {
            "code": "busy",
            "message": "the database is busy: try again shortly",
            "field": None,
        }
    }
    assert BUSY_TIMEOUT <= waited < 3 * BUSY_TIMEOUT + RETRIES * PAUSE.cap + 2
    assert counted(busy_app) == (0, 0)  # nothing of the refused create was kept
    created = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token))
    assert created.status_code == 201 and counted(busy_app) == (1, 1)


@pytest.mark.parametrize("write", ["patch", "delete", "user budget"])
def test_every_write_answers_503_when_held_up(busy_app, database_url, write):
    client = busy_app.test_client()
    token = user_token(busy_app)
    crawler = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token)).json
    url = f"/api/v1/crawlers/{crawler['id']}"
    calls: dict[str, Callable[[], Any]] = {
        "patch": lambda: client.patch(url, json={"priority": "high"}, headers=bearer(token)),
        "delete": lambda: client.delete(url, headers=bearer(token)),
        "user budget": lambda: client.patch(
            f"/api/v1/users/{crawler['user_id']}", json={"item_limit": 9}, headers=bearer(ADMIN)
        ),
    }
    with write_lock_held(database_url):
        response = calls[write]()
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert response.json["error"]["code"] == "busy"
    assert counted(busy_app) == (1, 1)
    assert client.get(url, headers=bearer(token)).json == crawler


def contention_error(tmp_path: Path) -> OperationalError:
    """A real "database is locked", as SQLAlchemy raises it."""
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    holder, waiter = db.make_engine(url, 0.001), db.make_engine(url, 0.001)
    try:
        with holder.connect() as held:
            held.exec_driver_sql("CREATE TABLE t (x INTEGER)")
            held.commit()
            held.exec_driver_sql("INSERT INTO t VALUES (1)")
            with waiter.connect() as blocked:
                try:
                    blocked.exec_driver_sql("INSERT INTO t VALUES (2)")
                except OperationalError as error:
                    return error
    finally:
        holder.dispose()
        waiter.dispose()
    raise AssertionError("the second writer was not refused")


def test_contention_is_told_from_other_database_errors(tmp_path):
    assert db.is_contention(contention_error(tmp_path))
    engine = db.make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    with pytest.raises(OperationalError) as missing, engine.connect() as connection:
        connection.exec_driver_sql("SELECT * FROM no_such_table")
    engine.dispose()
    assert not db.is_contention(missing.value)
    assert not db.is_contention(ValueError("database is locked"))


def test_a_lock_not_granted_within_the_busy_timeout_is_contention(database_url):
    """SQLite's busy timeout, PostgreSQL's lock_timeout: both set from the one setting."""
    engine = db.make_engine(database_url, 0.1)
    change = text("INSERT INTO crawler_changes (crawler_id, source_key) VALUES (1, 'k')")
    try:
        with (
            write_lock_held(database_url),
            engine.connect() as connection,
            pytest.raises(OperationalError) as refused,
        ):
            connection.execute(change)
    finally:
        engine.dispose()
    assert db.is_contention(refused.value)


def test_a_quick_refusal_is_tried_again_and_a_lasting_one_is_a_503(busy_app, tmp_path):
    error = contention_error(tmp_path)
    calls = Counter[str]()

    def refused_once() -> str:
        calls["once"] += 1
        if calls["once"] == 1:
            raise error
        return "done"

    def always_refused() -> str:
        calls["always"] += 1
        raise error

    def broken() -> str:
        calls["broken"] += 1
        raise OperationalError("SELECT 1", {}, sqlite3.OperationalError("disk I/O error"))

    with busy_app.test_request_context("/api/v1/crawlers"):
        assert retrying(refused_once)() == "done" and calls["once"] == 2
        with pytest.raises(ApiError) as busy:
            retrying(always_refused)()
        assert calls["always"] == 1 + RETRIES
        assert (busy.value.status, busy.value.retry_after) == (503, 1)
        with pytest.raises(OperationalError):
            retrying(broken)()
        assert calls["broken"] == 1


@pytest.fixture
def patient_app(database_url: str, tmp_path: Path) -> Iterator[Flask]:
    """The hub at its default busy timeout."""
    app = make_app(database_url, tmp_path, Settings().database_busy_timeout)
    yield app
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()


@pytest.fixture
def patient_url(patient_app: Flask) -> Iterator[str]:
    with served(patient_app, "patient-hub") as url:
        yield url


def test_eight_clients_creating_crawlers_while_writes_contend_get_no_5xx(
    patient_app, patient_url, database_url
):
    """8 clients create 100 crawlers each over HTTP while another connection keeps taking the
    write lock for 20 ms at a time, as a monitor recording a pass does: about a quarter of the
    time, so hundreds of creates meet it."""
    clients, each = 8, 100
    token = user_token(patient_app)
    statuses: Counter[int] = Counter()
    guard = threading.Lock()
    stop = threading.Event()

    def contend() -> None:
        while not stop.is_set():
            with write_lock_held(database_url):
                time.sleep(0.02)
            time.sleep(0.05)

    def create(client: int) -> None:
        with requests.Session() as http:
            for n in range(each):
                response = http.post(
                    f"{patient_url}/api/v1/crawlers",
                    json=rss(client * each + n),
                    headers=bearer(token),
                    timeout=60,
                )
                with guard:
                    statuses[response.status_code] += 1

    contender = threading.Thread(target=contend, daemon=True)
    contender.start()
    threads = [threading.Thread(target=create, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    contender.join(timeout=5)
    assert statuses == {201: clients * each}
    assert counted(patient_app) == (clients * each, clients * each)
