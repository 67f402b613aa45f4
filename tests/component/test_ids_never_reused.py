"""A deleted crawler's or webhook's id is never given to a new one, on each back end: nodes,
stores and in-flight deliveries know them by id, so a reused id would inherit the old one's
statuses, items and events. Migration 0015 brings SQLite databases made before it along."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from alembic import command
from sqlalchemy import Connection, MetaData, Table, delete, func, insert, select, text

from blackwidow import db
from blackwidow.models import (
    Assignment,
    Crawler,
    CrawlerChange,
    Node,
    SubscriberRun,
    User,
    Webhook,
    WebhookDelivery,
)
from tests.component.conftest import bearer
from tests.component.test_api import rss
from tests.component.test_migrations import connected

NAMES = itertools.count(1)  # crawler names, unique per user as the hub wants

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
CHILDREN = (Assignment, SubscriberRun, WebhookDelivery)


def test_deleting_the_newest_crawler_then_creating_one_gives_a_new_id(client, make_user):
    token = bearer(make_user()["token"])
    first = client.post("/api/v1/crawlers", json=rss(), headers=token).json
    newest = client.post("/api/v1/crawlers", json=rss(), headers=token).json
    assert client.delete(f"/api/v1/crawlers/{newest['id']}", headers=token).status_code == 204

    created = client.post("/api/v1/crawlers", json=rss(), headers=token).json

    assert created["id"] > newest["id"] > first["id"]
    listed = client.get("/api/v1/crawlers", headers=token).json
    assert [c["id"] for c in listed] == [first["id"], created["id"]]
    assert (created["items_collected"], created["items_delivered"]) == (0, 0)


def crawler_row(user_id: int) -> dict[str, Any]:
    name = f"news {next(NAMES)}"  # a user's crawler names are unique
    return {"uuid": "k", "user_id": user_id, "name": name, "source": "rss", "query": {}}


def add(connection: Connection, model: Any, **values: Any) -> int:
    return connection.execute(insert(model).values(**values)).inserted_primary_key[0]


def seed(connection: Connection) -> int:
    """A user with three crawlers and two webhooks, each with children; the newest crawler
    then deleted (its children cascading), leaving the change the monitor has not read yet.
    Returns the deleted crawler's id."""
    user = add(connection, User, name="ana", token_hash="h", created_at=NOW)
    node = add(connection, Node, url="http://node", registered_at=NOW)
    crawlers = [add(connection, Crawler, **crawler_row(user), created_at=NOW) for _ in range(3)]
    for crawler in crawlers:
        add(connection, Assignment, crawler_id=crawler, node_id=node)
        add(connection, SubscriberRun, run=f"run-{crawler}", crawler_id=crawler, delivered=9)
    add(connection, CrawlerChange, crawler_id=crawlers[-1], source_key="k")
    for _ in range(2):
        hook = add(connection, Webhook, user_id=user, url="u", secret="s")
        delivery = {"event_id": str(hook), "event_type": "t", "body": "{}", "created_at": NOW}
        add(connection, WebhookDelivery, webhook_id=hook, **delivery)
    connection.execute(delete(Crawler).where(Crawler.id == crawlers[-1]))
    return crawlers[-1]


def delete_newest(connection: Connection, model: Any) -> int:
    newest = connection.scalar(select(func.max(model.id)))
    connection.execute(delete(model).where(model.id == newest))
    return newest


def columns_of(url: str) -> dict[str, list[str]]:
    """Each table's columns as the database has them now (not as the models describe them)."""
    with connected(url) as connection:
        names = [m.__tablename__ for m in (Crawler, Webhook, *CHILDREN)]
        tables = (Table(n, MetaData(), autoload_with=connection) for n in names)
        return {t.name: [c.name for c in t.columns] for t in tables}


def rows(url: str, columns: dict[str, list[str]]) -> dict[str, list[tuple]]:
    """Every row of the tables, in the columns named (those of the oldest revision compared)."""
    with connected(url) as connection:
        tables: Iterator[Table] = (m.__table__ for m in (Crawler, Webhook, *CHILDREN))
        return {
            t.name: sorted(connection.execute(select(*(t.c[c] for c in columns[t.name]))).all())
            for t in tables
        }


def test_upgrading_and_downgrading_keep_every_row_and_no_deleted_id_comes_back(empty_database_url):
    url = empty_database_url
    command.upgrade(db.alembic_config(url), "0014")
    engine = db.make_engine(url)  # the hub's engine: foreign keys on, deletes cascade
    with engine.begin() as connection:
        deleted_before = seed(connection)
    engine.dispose()
    kept = columns_of(url)
    before = rows(url, kept)
    assert [len(before[m.__tablename__]) for m in CHILDREN] == [2, 2, 2]

    db.upgrade(url)

    assert rows(url, kept) == before
    engine = db.make_engine(url)
    with engine.begin() as connection:
        user = connection.scalar(select(func.min(User.id)))
        assert add(connection, Crawler, **crawler_row(user), created_at=NOW) > deleted_before
        deleted_crawler = delete_newest(connection, Crawler)
        deleted_hook = delete_newest(connection, Webhook)
        assert add(connection, Crawler, **crawler_row(user), created_at=NOW) > deleted_crawler
        assert add(connection, Webhook, user_id=user, url="u", secret="s") > deleted_hook
    engine.dispose()

    upgraded = rows(url, kept)
    command.downgrade(db.alembic_config(url), "0014")
    assert rows(url, kept) == upgraded


def test_sqlite_keeps_autoincrement_on_crawlers_and_webhooks(database_url):
    with connected(database_url) as connection:
        if connection.dialect.name != "sqlite":
            return
        schema = dict(connection.execute(text("SELECT name, sql FROM sqlite_master")).all())
    assert "AUTOINCREMENT" in schema["crawlers"]
    assert "AUTOINCREMENT" in schema["webhooks"]
    assert "AUTOINCREMENT" not in schema["users"]
