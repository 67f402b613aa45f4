"""GET /api/v1/items?q=: a search across the caller's crawlers, on the real hub app with the
SQLite store, and the 501 of a store that cannot search (the suite's Cassandra)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blackwidow.app import create_app
from blackwidow.store import open_store
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


@pytest.mark.services("cassandra_service")
def test_a_store_that_cannot_search_answers_501_naming_why(
    tmp_path: Path, sqlite_template: Path, cassandra_store_url: str
) -> None:
    app = hub(tmp_path, sqlite_template, cassandra_store_url)
    try:
        answer = app.test_client().get("/api/v1/items?q=fox", headers=bearer(ADMIN))
        assert answer.status_code == 501
        assert answer.json["error"]["code"] == "search_unsupported"
        assert "no text analyzer" in answer.json["error"]["message"]
    finally:
        app.extensions["blackwidow"].store.close()
