"""GET /api/v1/items?q=: a search across the caller's crawlers, on the real hub app with the
SQLite store, and with Cassandra: its order, and the 501 of a keyspace without its index."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blackwidow.app import create_app
from blackwidow.core.store import open_store, upgrade_store
from blackwidow.core.store.cassandra.config import parse
from blackwidow.core.store.cassandra.store import make_cluster
from tests.component.conftest import ADMIN, bearer, hub_settings
from tests.component.test_items_api import T0, crawler, item, user, walk


def hub(tmp_path: Path, sqlite_template: Path, store_url: str | None = None) -> Flask:
    shutil.copyfile(sqlite_template, tmp_path / "hub.db")
    settings = hub_settings(f"sqlite:///{tmp_path / 'hub.db'}", tmp_path)
    return create_app(settings, open_store(store_url) if store_url else None)


@pytest.fixture
def app(tmp_path: Path, sqlite_template: Path) -> Iterator[Flask]:
    built = hub(tmp_path, sqlite_template)
    yield built
    built.extensions["blackwidow"].store.close()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def two_users(app: Flask, client: FlaskClient) -> dict[str, Any]:
    """Ana with two crawlers, Bo with one; every item is about foxes, some about dogs too."""
    ana, bo = user(client, "ana"), user(client, "bo")
    first, second, bos = crawler(client, ana), crawler(client, ana), crawler(client, bo)
    store = app.extensions["blackwidow"].store
    store.add([item(n, first, n, title=f"fox {'dog' * (n % 2)}") for n in range(10)])
    store.add([item(n, second, n, text="a fox and a dog") for n in range(10, 14)])
    store.add([item(n, bos, n, title="fox dog") for n in range(20, 30)])
    return {"ana": ana, "bo": bo, "first": first, "second": second, "bos": bos}


def ids(client: FlaskClient, url: str, headers: dict[str, str]) -> list[str]:
    return [found for page in walk(client, url, headers) for found in page]


def test_a_user_finds_only_the_items_of_their_own_crawlers(
    client: FlaskClient, two_users: dict[str, Any]
) -> None:
    ana, bo = two_users["ana"], two_users["bo"]
    ana_dogs = [f"item-{n:03}" for n in (1, 3, 5, 7, 9, 10, 11, 12, 13)]
    assert sorted(ids(client, "/api/v1/items?q=DOG", ana)) == ana_dogs
    assert sorted(ids(client, "/api/v1/items?q=dog+fox", bo)) == [
        f"item-{n:03}" for n in range(20, 30)
    ]
    everyone = ids(client, "/api/v1/items?q=dog", bearer(ADMIN))
    assert len(everyone) == len(ana_dogs) + 10


def test_pages_chain_by_next_and_link_without_repeating(
    client: FlaskClient, two_users: dict[str, Any]
) -> None:
    pages = walk(client, "/api/v1/items?q=fox&limit=3", two_users["ana"])
    found = [i for page in pages for i in page]
    assert [len(page) for page in pages] == [3, 3, 3, 3, 2]
    assert sorted(found) == [f"item-{n:03}" for n in range(14)]


def test_crawler_and_window_narrow_a_search(client: FlaskClient, two_users: dict[str, Any]) -> None:
    ana, second = two_users["ana"], two_users["second"]
    assert sorted(ids(client, f"/api/v1/items?q=dog&crawler={second}", ana)) == [
        f"item-{n:03}" for n in range(10, 14)
    ]
    both = f"crawler={second}&crawler={two_users['first']}"
    assert len(ids(client, f"/api/v1/items?q=dog&{both}", ana)) == 9
    since, until = (T0 + timedelta(hours=h) for h in (3, 11))
    window = f"since={since:%Y-%m-%dT%H:%M:%SZ}&until={until:%Y-%m-%dT%H:%M:%SZ}"
    assert sorted(ids(client, f"/api/v1/items?q=dog&{window}", ana)) == [
        f"item-{n:03}" for n in (3, 5, 7, 9, 10)
    ]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("", "q"),
        ("q=", "q"),
        ("q=...!", "q"),
        ("q=fox&since=yesterday", "since"),
        ("q=fox&since=2024-05-02T00:00:00Z&until=2024-05-01T00:00:00Z", "until"),
        ("q=fox&crawler=x", "crawler"),
        ("q=fox&crawler=999999", "crawler"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    client: FlaskClient, two_users: dict[str, Any], query: str, field: str
) -> None:
    answer = client.get(f"/api/v1/items?{query}", headers=two_users["ana"])
    assert answer.status_code == 422, answer.json
    assert answer.json["error"]["field"].split(".")[0] == field


def test_another_users_crawler_reads_as_unknown(
    client: FlaskClient, two_users: dict[str, Any]
) -> None:
    answer = client.get(f"/api/v1/items?q=fox&crawler={two_users['bos']}", headers=two_users["ana"])
    assert answer.status_code == 422 and answer.json["error"]["field"] == "crawler"


def test_a_cursor_holds_only_for_its_own_query(
    client: FlaskClient, two_users: dict[str, Any]
) -> None:
    ana = two_users["ana"]
    following = client.get("/api/v1/items?q=fox&limit=2", headers=ana).json["next"]
    cursor = following.split("cursor=")[1]
    other = client.get(f"/api/v1/items?q=dog&limit=2&cursor={cursor}", headers=ana)
    assert other.status_code == 400 and other.json["error"]["field"] == "cursor"
    stolen = client.get(f"/api/v1/items?q=fox&limit=2&cursor={cursor}", headers=two_users["bo"])
    assert stolen.status_code == 400


@pytest.fixture
def own_keyspace(cassandra_service: Any) -> Iterator[str]:
    """A keyspace of this test's own: the hub's crawler ids start at 1, as other tests' may."""
    keyspace = f"search_{uuid.uuid4().hex[:10]}"
    url = f"cassandra://{cassandra_service.contact_points}/{keyspace}?consistency=ONE&search=on"
    upgrade_store(url)
    yield url
    cluster = make_cluster(parse(url.removeprefix("cassandra://")))
    try:
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
    finally:
        cluster.shutdown()


@pytest.mark.services("cassandra_service")
def test_on_cassandra_a_search_pages_newest_day_first_and_without_its_index_answers_501(
    tmp_path: Path, sqlite_template: Path, own_keyspace: str
) -> None:
    app = hub(tmp_path, sqlite_template, own_keyspace)
    client = app.test_client()
    try:
        ana, bo = user(client, "ana"), user(client, "bo")
        mine, theirs = crawler(client, ana), crawler(client, bo)
        app.extensions["blackwidow"].store.add(
            [item(n, c, n * 10, title="fox") for c in (mine, theirs) for n in range(5)]
        )
        pages = walk(client, "/api/v1/items?q=FOX&limit=2", ana)
        assert [i for page in pages for i in page] == [f"item-{n:03}" for n in (4, 3, 2, 1, 0)]
        cluster = make_cluster(parse(own_keyspace.removeprefix("cassandra://")))
        try:
            keyspace = own_keyspace.split("/")[-1].split("?")[0]
            cluster.connect().execute(f"DELETE FROM {keyspace}.search_filled WHERE one = 1")
        finally:
            cluster.shutdown()
    finally:
        app.extensions["blackwidow"].store.close()
    (tmp_path / "again").mkdir()
    app = hub(tmp_path / "again", sqlite_template, own_keyspace)
    try:
        answer = app.test_client().get("/api/v1/items?q=fox", headers=bearer(ADMIN))
        assert answer.status_code == 501
        assert answer.json["error"]["code"] == "search_unsupported"
        assert "no index of the words" in answer.json["error"]["message"]
    finally:
        app.extensions["blackwidow"].store.close()
