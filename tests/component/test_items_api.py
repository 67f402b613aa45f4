"""GET /api/v1/crawlers/<id>/items pages, and its exports items.jsonl and items.csv, on the
real hub app with each item store (SQLite, and the suite's Cassandra)."""

from __future__ import annotations

import csv
import io
import itertools
import json
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from blackwidow.app import create_app
from blackwidow.core.store import StoreUnavailable, open_store
from blackwidow.models import MAX_INTEGER
from sources.model import Item
from tests.component.conftest import ADMIN, bearer, hub_settings
from tests.support import served

NAMES = itertools.count(1)  # crawler names, unique per user as the hub wants

T0 = datetime(2024, 5, 1, 22, tzinfo=UTC)
STORES = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("cassandra", id="cassandra", marks=pytest.mark.services("cassandra_service")),
]
AWKWARD = [
    'a "quoted", comma\'d title',
    "lines\nand\r\nreturns",
    "ünïcödé ✓ \u2028 separator",
    None,
    "",
    "=1+1",
]


@pytest.fixture(params=STORES)
def app(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> Iterator[Flask]:
    """The hub on a SQLite database of its own, its items in the store the param names."""
    shutil.copyfile(sqlite_template, tmp_path / "hub.db")
    settings = hub_settings(f"sqlite:///{tmp_path / 'hub.db'}", tmp_path)
    store = None
    if request.param == "cassandra":
        store = open_store(request.getfixturevalue("cassandra_store_url"))
    built = create_app(settings, store)
    if request.param == "cassandra":  # the keyspace is shared: crawler ids of this test's own
        placeholder = crawler(built.test_client(), user(built.test_client(), "placeholder"))
        with sqlite3.connect(tmp_path / "hub.db") as sql:
            base = request.getfixturevalue("crawler_ids")[0] % MAX_INTEGER // 2
            sql.execute("UPDATE crawlers SET id = ? WHERE id = ?", (base, placeholder))
    yield built
    built.extensions["blackwidow"].store.close()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def user(client: FlaskClient, name: str) -> dict[str, str]:
    made = client.post("/api/v1/users", json={"name": name}, headers=bearer(ADMIN))
    return bearer(made.json["token"])


def crawler(client: FlaskClient, headers: dict[str, str]) -> int:
    body = {
        "name": f"c{next(NAMES)}",
        "source": "rss",
        "query": {"feeds": ["https://blog.example/feed"]},
    }
    return client.post("/api/v1/crawlers", json=body, headers=headers).json["id"]


def item(n: int, crawler_id: int, hours: float, **fields: Any) -> Item:
    """Fetched `hours` after T0 (so across UTC days), published as long before it."""
    values: dict[str, Any] = {
        "id": f"item-{n:03}",
        "source": "rss",
        "url": f"https://blog.example/{n}",
        "title": f"title {n}",
        "text": "text",
        "author": "ann",
        "published_at": T0 - timedelta(hours=hours),
        "fetched_at": T0 + timedelta(hours=hours),
        "crawler_id": crawler_id,
    }
    return Item(**(values | fields))


def walk(client: FlaskClient, url: str, headers: dict[str, str]) -> list[list[str]]:
    """The ids of every page, following `next` and checking the Link header says the same."""
    pages: list[list[str]] = []
    while url:
        answer = client.get(url, headers=headers)
        assert answer.status_code == 200, answer.json
        pages.append([i["id"] for i in answer.json["items"]])
        url = answer.json["next"]
        link = answer.headers.get("Link")
        assert link == (f'<{url}>; rel="next"' if url else None)
        assert len(pages) < 50
    return pages


@pytest.fixture
def ana(app: Flask, client: FlaskClient) -> tuple[dict[str, str], int]:
    """A user with a crawler holding 23 items fetched over three UTC days."""
    headers = user(client, "ana")
    crawler_id = crawler(client, headers)
    app.extensions["blackwidow"].store.add([item(n, crawler_id, n * 1.5) for n in range(23)])
    return headers, crawler_id


NEWEST_FIRST = [f"item-{n:03}" for n in reversed(range(23))]


def test_pages_chain_to_the_end_by_next_and_link(client: FlaskClient, ana: Any) -> None:
    headers, crawler_id = ana
    pages = walk(client, f"/api/v1/crawlers/{crawler_id}/items?limit=5", headers)
    assert [i for page in pages for i in page] == NEWEST_FIRST
    assert [len(page) for page in pages][:4] == [5, 5, 5, 5]
    first = client.get(f"/api/v1/crawlers/{crawler_id}/items", headers=headers).json
    assert len(first["items"]) == 23 and first["next"] is None  # default limit 50


def test_a_window_bounds_the_pages_on_either_instant(client: FlaskClient, ana: Any) -> None:
    headers, crawler_id = ana
    url = f"/api/v1/crawlers/{crawler_id}/items"
    since, until = T0 + timedelta(hours=3), T0 + timedelta(hours=30)  # items 2 to 19
    query = f"since={since.isoformat()}&until={until.isoformat()}".replace("+", "%2B")
    fetched = walk(client, f"{url}?limit=4&{query}", headers)
    assert [i for page in fetched for i in page] == [f"item-{n:03}" for n in range(19, 1, -1)]
    since, until = T0 - timedelta(hours=30), T0 - timedelta(hours=3)  # items 3 to 20
    naive = f"since={since:%Y-%m-%dT%H:%M:%S}&until={until:%Y-%m-%dT%H:%M:%S}"  # read as UTC
    published = walk(client, f"{url}?limit=7&by=published_at&{naive}", headers)
    assert [i for page in published for i in page] == [f"item-{n:03}" for n in range(20, 2, -1)]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("since=yesterday", "since"),
        ("until=2024-13-01T00:00:00Z", "until"),
        ("by=title", "by"),
        ("since=2024-05-02T00:00:00Z&until=2024-05-01T00:00:00Z", "until"),
        ("format=xml", "format"),
        ("limit=1001", "limit"),
    ],
)
def test_bad_input_names_its_field(client: FlaskClient, ana: Any, query: str, field: str) -> None:
    headers, crawler_id = ana
    for path in ("items", "items.csv", "items.jsonl"):
        answer = client.get(f"/api/v1/crawlers/{crawler_id}/{path}?{query}", headers=headers)
        if path == "items" or field in {"since", "until", "by"}:
            assert answer.status_code == 422, (path, answer.json)
            assert answer.json["error"]["field"] == field


def test_a_cursor_holds_only_for_its_caller_crawler_and_filters(
    client: FlaskClient, ana: Any
) -> None:
    headers, crawler_id = ana
    url = f"/api/v1/crawlers/{crawler_id}/items"
    cursor = client.get(f"{url}?limit=5", headers=headers).json["next"].rsplit("cursor=", 1)[1]
    assert client.get(f"{url}?cursor={cursor}", headers=headers).status_code == 200
    bob = user(client, "bob")
    bobs = f"/api/v1/crawlers/{crawler(client, bob)}/items"
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    refusals = [
        (url, tampered, headers),
        (url, "not-a-cursor", headers),
        (url, cursor, bearer(ADMIN)),  # the admin sees the crawler, not ana's cursor
        (bobs, cursor, bob),  # bob's own list
        (f"{url}?by=published_at", cursor, headers),
        (f"{url}?since=2024-05-01T00:00:00Z", cursor, headers),
    ]
    for target, given, who in refusals:
        joiner = "&" if "?" in target else "?"
        answer = client.get(f"{target}{joiner}cursor={given}", headers=who)
        assert answer.status_code == 400, (target, answer.json)
        assert answer.json["error"]["field"] == "cursor"


def test_a_conversation_pages_oldest_first(app: Flask, client: FlaskClient, ana: Any) -> None:
    headers, crawler_id = ana
    thread = "https://blog.example/thread"
    app.extensions["blackwidow"].store.add(
        [item(100 + n, crawler_id, n, conversation_id=thread) for n in range(5)]
    )
    pages = walk(client, f"/api/v1/conversations/{thread}?limit=2", headers)
    # published runs backwards: the last fetched is the oldest
    assert [i for page in pages for i in page] == [f"item-{n}" for n in range(104, 99, -1)]


@pytest.fixture
def awkward(app: Flask, client: FlaskClient) -> tuple[dict[str, str], int]:
    headers = user(client, "ana")
    crawler_id = crawler(client, headers)
    values = [
        item(n, crawler_id, n, title=value, text=value, author=value, html=value)
        for n, value in enumerate(AWKWARD)
    ]
    unpublished = item(len(AWKWARD), crawler_id, 30, published_at=None, url=None)
    app.extensions["blackwidow"].store.add([*values, unpublished])
    return headers, crawler_id


def test_exports_hold_every_item_as_the_page_shows_it(client: FlaskClient, awkward: Any) -> None:
    headers, crawler_id = awkward
    url = f"/api/v1/crawlers/{crawler_id}/items"
    page = client.get(url, headers=headers).json["items"]
    assert len(page) == len(AWKWARD) + 1

    lines = client.get(f"{url}.jsonl", headers=headers)
    assert lines.status_code == 200 and lines.mimetype == "application/x-ndjson"
    disposition = lines.headers["Content-Disposition"]
    assert disposition == f"attachment; filename=crawler-{crawler_id}.jsonl"
    assert lines.data.endswith(b"\n") and lines.data.isascii()
    assert [json.loads(line) for line in lines.data.split(b"\n")[:-1]] == page

    table = client.get(f"{url}.csv", headers=headers)
    assert table.status_code == 200 and table.mimetype == "text/csv"
    disposition = table.headers["Content-Disposition"]
    assert disposition == f"attachment; filename=crawler-{crawler_id}.csv"
    rows = list(csv.DictReader(io.StringIO(table.data.decode(), newline="")))
    assert rows == [{k: "" if v is None else str(v) for k, v in i.items()} for i in page]
    assert list(rows[0]) == [  # the item's fields, in a fixed order
        *("id", "crawler_id", "source", "url", "title", "text", "html", "author"),
        *("published_at", "fetched_at", "conversation_id", "in_reply_to", "version"),
    ]

    for name, whole in (("csv", table), ("jsonl", lines)):
        assert client.get(f"{url}?format={name}", headers=headers).data == whole.data


def test_exports_keep_to_a_window_and_to_the_owner(client: FlaskClient, awkward: Any) -> None:
    headers, crawler_id = awkward
    url = f"/api/v1/crawlers/{crawler_id}/items"
    since = (T0 + timedelta(hours=2)).isoformat().replace("+", "%2B")
    lines = client.get(f"{url}.jsonl?since={since}", headers=headers).data.split(b"\n")[:-1]
    assert [json.loads(line)["id"] for line in lines] == [f"item-00{n}" for n in range(6, 1, -1)]
    empty = client.get(f"{url}.csv?by=published_at&since=2030-01-01T00:00:00Z", headers=headers)
    assert empty.data.decode().splitlines() == [",".join(json.loads(lines[0]))]
    bob = user(client, "bob")
    for path in ("items.csv", "items.jsonl", "items?format=csv"):
        refused = client.get(f"/api/v1/crawlers/{crawler_id}/{path}", headers=bob)
        assert refused.status_code == 404 and refused.json["error"]["code"] == "not_found"
        assert client.get(f"/api/v1/crawlers/{crawler_id}/{path}").status_code == 401


def test_a_store_failing_mid_export_cuts_the_transfer(
    app: Flask, client: FlaskClient, ana: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client sees a broken chunked transfer, never a file that looks complete."""
    headers, crawler_id = ana
    store = app.extensions["blackwidow"].store
    items = store.items(crawler_id, 100)

    def failing(*_: Any, **__: Any) -> Iterator[Item]:
        yield from items * 30  # past the first chunk, which is read before the answer
        raise StoreUnavailable("the store went away")

    monkeypatch.setattr(store, "stream", failing)
    with served(app, "export-hub") as url:
        for path in ("items.jsonl", "items.csv"):
            target = f"{url}/api/v1/crawlers/{crawler_id}/{path}"
            answer = requests.get(target, headers=headers, timeout=10, stream=True)
            assert answer.status_code == 200
            with pytest.raises(requests.exceptions.ChunkedEncodingError):
                answer.content  # noqa: B018 (reading the body is the point)
