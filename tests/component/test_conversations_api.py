"""GET /api/v1/conversations/<id>: one conversation across the caller's crawlers, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from sources.model import Item
from tests.component.conftest import ADMIN, bearer

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)
THREAD = "https://blog.example/posts/1"


def create_crawler(client: FlaskClient, token: str) -> int:
    body = {"name": "c", "source": "rss", "query": {"feeds": ["https://blog.example/feed"]}}
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
    assert response.status_code == 201, response.json
    return response.json["id"]


def thread_item(
    item_id: str, crawler_id: int, minutes: int, reply_to: str | None, html: str | None = None
) -> Item:
    return Item(
        id=item_id,
        source="rss",
        url=item_id,
        title=item_id,
        text=None,
        author=None,
        published_at=T0 + timedelta(minutes=minutes),
        fetched_at=T0,
        conversation_id=THREAD,
        in_reply_to=reply_to,
        crawler_id=crawler_id,
        html=html,
    )


def read(client: FlaskClient, token: str, conversation: str = THREAD, **query: Any) -> Any:
    return client.get(
        f"/api/v1/conversations/{conversation}", query_string=query, headers=bearer(token)
    )


def test_a_conversation_shows_the_callers_items_in_order(
    hub_app: Flask, client: FlaskClient, make_user: Any
) -> None:
    ana, bob = make_user("ana")["token"], make_user("bob")["token"]
    mine, theirs = create_crawler(client, ana), create_crawler(client, bob)
    store = hub_app.extensions["blackwidow"].store
    root = thread_item(THREAD, mine, 0, None, html="<p>the <em>post</em></p>")
    store.add([thread_item(f"{THREAD}#reply", mine, 5, THREAD), root])
    store.add([thread_item(f"{THREAD}#bob", theirs, 1, THREAD)])

    answer = read(client, ana)
    assert answer.status_code == 200
    assert [(i["id"], i["in_reply_to"], i["html"]) for i in answer.json["items"]] == [
        (THREAD, None, "<p>the <em>post</em></p>"),
        (f"{THREAD}#reply", THREAD, None),  # null when the item has none
    ]
    assert [i["id"] for i in read(client, bob).json["items"]] == [f"{THREAD}#bob"]
    assert len(read(client, ADMIN).json["items"]) == 3  # support staff see every crawler
    assert [i["id"] for i in read(client, ana, limit=1).json["items"]] == [THREAD]
    assert read(client, ana, "https://elsewhere.example/x").json == {"items": [], "next": None}


def test_a_conversation_needs_a_token_and_a_sane_limit(client: FlaskClient, make_user: Any) -> None:
    token = make_user()["token"]
    assert client.get(f"/api/v1/conversations/{THREAD}").status_code == 401
    bad = read(client, token, limit=0)
    assert bad.status_code == 422 and bad.json["error"]["field"] == "limit"
