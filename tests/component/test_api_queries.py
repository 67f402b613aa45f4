"""The SQL behind the calls that must stay fast as tables grow: creating a crawler reads no
table whole (SQLite's query plans show no scan), and the health detail counts in SQL without
loading a row."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event, update
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.models import Crawler
from tests.component.conftest import bearer


def rss(n: int) -> dict[str, Any]:
    return {"name": f"c{n}", "source": "rss", "query": {"feeds": [f"https://e{n}.example/f"]}}


def tweets(n: int) -> dict[str, Any]:
    return {"name": f"t{n}", "source": "twitter", "query": {"terms": [f"t{n}"]}}


@pytest.fixture
def engine(sessions: sessionmaker[Session]) -> Engine:
    with sessions() as session:
        bind = session.get_bind()
    assert isinstance(bind, Engine)
    return bind


@pytest.fixture
def statements(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    """Every SQL statement run while the test runs, with its parameters."""
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def full_reads(engine: Engine, statements: list[tuple[str, Any]]) -> list[str]:
    """The statements whose SQLite query plan scans a table (every row read), with the plan."""
    scans = []
    with engine.connect() as connection:
        for statement, parameters in statements:
            if not statement.lstrip().upper().startswith(("SELECT", "INSERT", "UPDATE", "DELETE")):
                continue
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            details = [row[-1] for row in plan]
            if any(detail.startswith("SCAN") for detail in details):
                scans.append(f"{statement} -> {details}")
    return scans


@pytest.mark.parametrize("body", [rss, tweets], ids=["rss", "twitter"])
def test_a_create_reads_no_table_whole(client, make_user, engine, statements, body):
    token = make_user()["token"]
    for n in range(20):
        assert (
            client.post("/api/v1/crawlers", json=body(n), headers=bearer(token)).status_code == 201
        )
    statements.clear()
    created = client.post("/api/v1/crawlers", json=body(99), headers=bearer(token))
    assert created.status_code == 201
    run = [" ".join(s.split()) for s, _ in statements]
    # what it reads of crawlers is whether the name is held, by the unique index (checked below)
    names = "SELECT crawlers.name, crawlers.id FROM crawlers WHERE crawlers.user_id = ?"
    read = [s for s in run if s.startswith("SELECT") and "FROM crawlers" in s]
    assert all(s.replace("%(user_id_1)s", "?").startswith(names) for s in read), run
    assert len([s for s in run if s.startswith(("SELECT", "INSERT"))]) <= 5, run
    if engine.dialect.name == "sqlite":
        assert full_reads(engine, list(statements)) == []


def test_health_counts_crawlers_in_sql(client, make_user, sessions, statements):
    token = make_user()["token"]
    ids = [
        client.post("/api/v1/crawlers", json=rss(n), headers=bearer(token)).json["id"]
        for n in range(12)
    ]
    with sessions.begin() as session:
        session.execute(update(Crawler).where(Crawler.id.in_(ids[:5])).values(state="running"))
        session.execute(update(Crawler).where(Crawler.id.in_(ids[5:7])).values(state="failed"))
    statements.clear()
    detail = client.get("/api/v1/health").json
    assert detail["crawlers"] == {"running": 5, "failed": 2, "pending": 5}
    reading_crawlers = [s for s, _ in statements if "FROM crawlers" in s]
    assert reading_crawlers and all("count(" in s.lower() for s in reading_crawlers)
