"""The migrations on each back end: they apply, undo and apply again, `blackwidow db upgrade`
runs them, and the schema they build is the one the models describe."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import Connection, insert, inspect, select
from sqlalchemy.exc import IntegrityError

from blackwidow import db
from blackwidow.cli import main
from blackwidow.models import Base, ClusterIdentity, Crawler, MonitorLock, User

HEAD = ScriptDirectory(str(db.MIGRATIONS)).get_current_head()


@contextmanager
def connected(url: str) -> Iterator[Connection]:
    """A connection whose engine is disposed afterwards, so the test database can be dropped."""
    engine = db.make_engine(url)
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def revision(url: str) -> str | None:
    with connected(url) as connection:
        return MigrationContext.configure(connection).get_current_revision()


def tables(url: str) -> set[str]:
    with connected(url) as connection:
        return set(inspect(connection).get_table_names()) - {"alembic_version"}


def lock_rows(url: str) -> list[str]:
    with connected(url) as connection:
        return list(connection.scalars(select(MonitorLock.name)))


def test_upgrade_downgrade_and_upgrade_again(empty_database_url):
    url = empty_database_url
    db.upgrade(url)
    assert revision(url) == HEAD
    assert tables(url) == set(Base.metadata.tables)
    assert lock_rows(url) == ["monitor"]

    command.downgrade(db.alembic_config(url), "base")
    assert revision(url) is None
    assert tables(url) == set()

    db.upgrade(url)
    assert revision(url) == HEAD
    assert lock_rows(url) == ["monitor"]


def cluster_ids(url: str) -> list[str]:
    with connected(url) as connection:
        return list(connection.scalars(select(ClusterIdentity.cluster_id)))


def test_each_database_migrated_is_a_cluster_of_its_own(empty_database_url):
    """0020 makes the database's identity: one row, a random UUID, made again by a fresh run
    (as for a new database), kept by a run with nothing to do."""
    url = empty_database_url
    command.upgrade(db.alembic_config(url), "0019")
    assert "cluster_identity" not in tables(url)
    db.upgrade(url)
    (first,) = cluster_ids(url)
    assert str(uuid.UUID(first)) == first
    db.upgrade(url)
    assert cluster_ids(url) == [first]

    command.downgrade(db.alembic_config(url), "0019")
    assert "cluster_identity" not in tables(url)
    db.upgrade(url)
    (again,) = cluster_ids(url)
    assert again != first


def test_the_migrated_schema_is_the_one_the_models_describe(database_url):
    with connected(database_url) as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []


@pytest.mark.parametrize("given_by", ["option", "environment"])
def test_db_upgrade_command_takes_the_url_from_option_or_environment(
    empty_database_url, monkeypatch, tmp_path, given_by
):
    url = empty_database_url
    monkeypatch.setenv("BLACKWIDOW_STORE", f"sqlite:///{tmp_path / 'items.db'}")
    if given_by == "option":
        arguments = ["db", "upgrade", "--db", url]
    else:
        monkeypatch.setenv("BLACKWIDOW_DATABASE_URL", url)
        arguments = ["db", "upgrade"]
    for _ in range(2):  # a second run finds nothing to do
        result = CliRunner().invoke(main, arguments)
        assert result.exit_code == 0, result.output
        assert "database upgraded" in result.output
    assert revision(url) == HEAD


def test_0018_renames_duplicate_crawler_names_before_making_them_unique(empty_database_url):
    """Duplicates seeded at 0017 are renamed by id (the lowest keeps the name), past a name
    the user already holds; another user's same name is no duplicate."""
    url = empty_database_url
    command.upgrade(db.alembic_config(url), "0017")
    names = {1: "news", 2: "news", 3: "news (2)", 4: "news", 5: "tech", 6: "news"}
    owners = {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2}
    found = _names_after_upgrade(url, names, owners)
    assert found == {1: "news", 2: "news (3)", 3: "news (2)", 4: "news (4)", 5: "tech", 6: "news"}
    with connected(url) as connection, pytest.raises(IntegrityError):
        connection.execute(insert(Crawler.__table__).values(**_crawler_row(7, 1, "tech")))


def test_0019_brings_stored_names_under_the_name_rule(empty_database_url):
    """Names seeded at 0018 with control characters or surrounding space are fitted: a run of
    control characters one space, trimmed, `Unnamed` for nothing left, and a fitted name the
    user holds already told apart; fit names and another user's are left as they are."""
    url = empty_database_url
    command.upgrade(db.alembic_config(url), "0018")
    names = {
        1: "  padded  ",
        2: "padded",
        3: "bell\x07\x07ring",
        4: "\x1b\x1b",
        5: "tab\there",
        6: " padded",
        7: "fine  as it is",
    }
    owners = {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2, 7: 1}
    found = _names_after_upgrade(url, names, owners)
    assert found == {
        1: "padded (2)",
        2: "padded",
        3: "bell ring",
        4: "Unnamed",
        5: "tab here",
        6: "padded",
        7: "fine  as it is",
    }


def _names_after_upgrade(url: str, names: dict[int, str], owners: dict[int, int]) -> dict[int, str]:
    """Seed users 1 and 2 and the crawlers named `names` (by id, owned as `owners` say) at the
    database's revision, upgrade to the head, and read every crawler's name back by id."""
    with connected(url) as connection:
        for user_id in (1, 2):
            connection.execute(
                insert(User.__table__).values(
                    id=user_id, name=f"u{user_id}", token_hash=f"{user_id}"
                )
            )
        for crawler_id, name in names.items():
            connection.execute(
                insert(Crawler.__table__).values(
                    **_crawler_row(crawler_id, owners[crawler_id], name)
                )
            )
        connection.commit()
    db.upgrade(url)
    with connected(url) as connection:
        return dict(connection.execute(select(Crawler.id, Crawler.name)).all())


def _crawler_row(crawler_id: int, user_id: int, name: str) -> dict[str, Any]:
    """A crawlers row as 0017 holds it, every column that takes no null filled."""
    now = datetime(2026, 5, 1, tzinfo=UTC)
    return {
        "id": crawler_id,
        "uuid": f"key-{crawler_id}",
        "user_id": user_id,
        "name": name,
        "source": "rss",
        "query": {"feeds": ["https://example.com/feed"]},
        "enabled": True,
        "priority": "normal",
        "state": "pending",
        "items_collected": 0,
        "items_delivered": 0,
        "rate": 0.0,
        "lease": 0,
        "created_at": now,
        "updated_at": now,
    }
