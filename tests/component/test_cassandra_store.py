"""What only the Cassandra store does: its versioned schema, and failing cleanly while down."""

from __future__ import annotations

import socket
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from blackwidow.core.store import (
    SearchUnsupported,
    StoreUnavailable,
    open_store,
    upgrade_store,
)
from blackwidow.core.store.cassandra import schema as cassandra_schema
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.store import make_cluster
from sources.model import Item

pytestmark = pytest.mark.services("cassandra_service")


def closed_port() -> int:
    """A loopback port nothing listens on: bound, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def item(crawler_id: int) -> Item:
    return Item("a", "rss", None, None, None, None, None, datetime.now(UTC), crawler_id=crawler_id)


def test_a_store_that_cannot_reach_cassandra_raises_store_unavailable() -> None:
    store = open_store(f"cassandra://127.0.0.1:{closed_port()}/anything?connect_timeout=1")
    try:
        with pytest.raises(StoreUnavailable, match="cassandra: NoHostAvailable"):
            store.add([item(1)])
        with pytest.raises(StoreUnavailable):
            store.count(1)
        with pytest.raises(StoreUnavailable):
            store.items(1, 10)
        assert store.ping() is False
    finally:
        store.close()


def test_a_keyspace_without_the_schema_asks_for_db_upgrade(cassandra_service: Any) -> None:
    url = f"cassandra://{cassandra_service.contact_points}/never_upgraded?consistency=ONE"
    store = open_store(url)
    try:
        with pytest.raises(StoreUnavailable, match=r"schema version 0 of 7.*blackwidow db upgrade"):
            store.count(1)
    finally:
        store.close()


def test_upgrade_is_versioned_idempotent_and_follows_the_replication_setting(
    cassandra_service: Any,
) -> None:
    keyspace = f"upgrade_{uuid.uuid4().hex[:10]}"
    url = f"cassandra://{cassandra_service.contact_points}/{keyspace}"
    applied = f"cassandra keyspace {keyspace} applied versions [1, 2, 3, 4, 5, 6, 7]"
    assert upgrade_store(url) == applied
    assert upgrade_store(url) == f"cassandra keyspace {keyspace} already current"
    assert upgrade_store(url + "?replication=datacenter1:1").endswith("already current")

    cluster = make_cluster(parse(url.removeprefix("cassandra://")))
    try:
        session = cluster.connect()
        versions = session.execute(f"SELECT version, description FROM {keyspace}.schema_versions")
        assert sorted(row.version for row in versions) == [1, 2, 3, 4, 5, 6, 7]
        replication = session.execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
        ).one()
        assert dict(replication.replication) == {
            "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
            "datacenter1": "1",
        }
        session.execute(f"DROP KEYSPACE {keyspace}", timeout=60)
    finally:
        cluster.shutdown()


def test_a_backfill_cut_short_is_run_again_by_the_next_upgrade(
    cassandra_store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version is recorded before its backfill, so the store opens while it runs, but its
    applied_at only once the backfill is done: an upgrade killed meanwhile is taken up again."""
    config = parse(cassandra_store_url.removeprefix("cassandra://"))
    runs: list[str] = []

    def backfill(session: Any, ks: str) -> None:
        runs.append(ks)
        if len(runs) == 1:
            raise TimeoutError("cut short")

    number = cassandra_schema.LATEST + 1
    later = cassandra_schema.SchemaVersion(number, "a backfill, for this test", (), backfill)
    monkeypatch.setattr(cassandra_schema, "VERSIONS", (*cassandra_schema.VERSIONS, later))
    monkeypatch.setattr(cassandra_schema, "LATEST", number)
    cluster = make_cluster(config)
    try:
        session = cluster.connect(config.keyspace)
        with pytest.raises(StoreUnavailable, match="cut short"):
            upgrade_store(cassandra_store_url)
        assert cassandra_schema.applied_version(session, config.keyspace) == number
        assert upgrade_store(cassandra_store_url).endswith(f"applied versions [{number}]")
        assert upgrade_store(cassandra_store_url).endswith("already current")
        assert runs == [config.keyspace, config.keyspace]
    finally:
        cluster.connect(config.keyspace).execute(
            "DELETE FROM schema_versions WHERE version = %s", (number,)
        )
        cluster.shutdown()


def test_a_keyspace_of_version_1_keeps_its_items_and_gains_html(
    cassandra_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written before html existed read back without it, and their totals still count;
    the new columns' statements run twice without harm (a version recorded as not applied is
    applied again)."""
    keyspace = f"old_{uuid.uuid4().hex[:10]}"
    url = f"cassandra://{cassandra_service.contact_points}/{keyspace}?consistency=ONE&search=on"
    with monkeypatch.context() as old:
        old.setattr(cassandra_schema, "VERSIONS", cassandra_schema.VERSIONS[:1])
        assert upgrade_store(url).endswith("applied versions [1]")
    cluster = make_cluster(parse(url.removeprefix("cassandra://")))
    session = cluster.connect(keyspace)
    store = open_store(url)
    try:
        fetched_at = datetime(2024, 5, 1, 12, tzinfo=UTC)
        session.execute(
            "INSERT INTO items_by_crawler (crawler_id, day, fetched_at, item_id, source, text)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (7, fetched_at.date(), fetched_at, "old", "rss", "plain"),
        )
        session.execute(
            "INSERT INTO crawler_days (crawler_id, day) VALUES (7, %s)", (fetched_at.date(),)
        )
        session.execute(
            "INSERT INTO crawler_totals (crawler_id, writer, stored) VALUES (7, uuid(), 1)"
        )
        assert upgrade_store(url).endswith("applied versions [2, 3, 4, 5, 6, 7]")
        session.execute("DELETE FROM schema_versions WHERE version = 2")
        assert upgrade_store(url).endswith("applied versions [2]")

        [old_item] = store.items(7, 10)
        assert (old_item.id, old_item.text, old_item.html) == ("old", "plain", None)
        new = Item(
            "new",
            "rss",
            None,
            None,
            "t",
            None,
            None,
            fetched_at + timedelta(hours=1),
            crawler_id=7,
            html="<b>t</b>",
        )
        store.add([new])
        assert store.items(7, 10) == [new, old_item]
        assert store.count(7) == 2  # the total written before version 3 still counts
        assert [i.id for i in store.search(("plain",), [7], 10).items] == ["old"]  # given words

        session.execute("DELETE FROM search_filled WHERE one = 1")  # as if never filled
        refusing = open_store(url)
        try:
            with pytest.raises(SearchUnsupported, match=r"keyspace .* no index of the words"):
                refusing.search(("plain",), [7], 10)
            assert upgrade_store(url).endswith("already current")  # fills the blocks again
            assert [i.id for i in refusing.search(("plain",), [7], 10).items] == ["old"]
        finally:
            refusing.close()
    finally:
        store.close()
        session.execute(f"DROP KEYSPACE {keyspace}", timeout=60)
        cluster.shutdown()


def test_large_items_are_written_in_single_partition_batches(cassandra_store_url: str) -> None:
    """A batch over Cassandra's 50 KiB cross-partition limit is fine within one partition."""
    store = open_store(cassandra_store_url)
    crawler_id = uuid.uuid4().int % 2**40
    now = datetime.now(UTC)
    big = [
        Item(f"big-{n}", "rss", None, None, "x" * 20_000, None, None, now, crawler_id=crawler_id)
        for n in range(200)
    ]
    try:
        assert len(store.add(big)) == 200
        assert store.count(crawler_id) == 200
        assert len(store.items(crawler_id, 500)) == 200
    finally:
        store.close()


def test_an_id_vouched_new_is_not_read(
    cassandra_store_url: str, crawler_ids: tuple[int, ...]
) -> None:
    """The read a seen-set saves: the store writes a key the caller vouches is new without
    asking items_by_id, so a wrong vouch stores the item again. Only a seen-set holding every
    id stored for the crawler vouches (spawn.pool.seen_set)."""
    store = open_store(cassandra_store_url)
    try:
        one = crawler_ids[0]
        first = item(one)
        again = replace(first, fetched_at=first.fetched_at + timedelta(seconds=1))
        assert [i.id for i in store.add([first])] == ["a"]
        assert store.add([again]) == []  # read: known
        assert [i.id for i in store.add([again], unseen={(one, "a")})] == ["a"]  # not read
        assert store.count(one) == 2
    finally:
        store.close()
