"""A user's record, budget and usage through the REST API on a real app and database."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from blackwidow.models import Crawler
from blackwidow.monitor import billing
from tests.component.conftest import ADMIN, bearer


def rss(name: str) -> dict[str, Any]:
    return {"name": name, "source": "rss", "query": {"feeds": ["https://example.com/feed.xml"]}}


def twitter(name: str) -> dict[str, Any]:
    return {"name": name, "source": "twitter", "query": {"terms": ["python"]}}


def test_a_user_reads_their_own_record_and_nobody_elses(client: FlaskClient, make_user) -> None:
    ana, bob = make_user("ana", item_limit=100), make_user("bob")
    own = client.get(f"/api/v1/users/{ana['id']}", headers=bearer(ana["token"]))
    assert own.json == {"id": ana["id"], "name": "ana", "item_limit": 100}
    assert client.get(f"/api/v1/users/{ana['id']}", headers=bearer(ADMIN)).json == own.json
    other = client.get(f"/api/v1/users/{ana['id']}", headers=bearer(bob["token"]))
    never = client.get("/api/v1/users/999999", headers=bearer(bob["token"]))
    assert other.status_code == never.status_code == 404
    assert other.json["error"]["field"] == never.json["error"]["field"] == "id"
    assert client.get(f"/api/v1/users/{ana['id']}").status_code == 401


def test_the_admin_sets_and_removes_a_users_budget(client: FlaskClient, make_user) -> None:
    ana = make_user("ana", item_limit=100)
    url = f"/api/v1/users/{ana['id']}"
    raised = client.patch(url, json={"item_limit": 500}, headers=bearer(ADMIN))
    assert raised.status_code == 200 and raised.json["item_limit"] == 500
    assert client.patch(url, json={}, headers=bearer(ADMIN)).json["item_limit"] == 500
    removed = client.patch(url, json={"item_limit": None}, headers=bearer(ADMIN))
    assert removed.json == {"id": ana["id"], "name": "ana", "item_limit": None}
    refused = client.patch(url, json={"item_limit": 10**6}, headers=bearer(ana["token"]))
    assert refused.status_code == 403
    assert client.get(url, headers=bearer(ana["token"])).json["item_limit"] is None
    missing = client.patch("/api/v1/users/999999", json={"item_limit": 1}, headers=bearer(ADMIN))
    assert missing.status_code == 404 and missing.json["error"]["field"] == "id"


@pytest.mark.parametrize("limit", [0, -1, "5", 2**31, 1.5])
def test_a_bad_budget_names_the_field(client: FlaskClient, make_user, limit: Any) -> None:
    ana = make_user("ana", item_limit=100)
    url = f"/api/v1/users/{ana['id']}"
    response = client.patch(url, json={"item_limit": limit}, headers=bearer(ADMIN))
    assert response.status_code == 422 and response.json["error"]["field"] == "item_limit"
    assert client.get(url, headers=bearer(ADMIN)).json["item_limit"] == 100


def test_usage_adds_up_stored_and_delivered_items(client: FlaskClient, make_user, sessions) -> None:
    ana, bob = make_user("ana", item_limit=100), make_user("bob")
    ids = []
    for body in (rss("news"), rss("blogs"), twitter("tweets")):
        created = client.post("/api/v1/crawlers", json=body, headers=bearer(ana["token"]))
        ids.append(created.json["id"])
    client.post("/api/v1/crawlers", json=rss("bobs"), headers=bearer(bob["token"]))
    with sessions.begin() as session:  # what the monitor would have recorded
        for crawler_id, stored, delivered in zip(ids, (10, 20, 30), (10, 25, 90), strict=True):
            crawler = session.get(Crawler, crawler_id)
            crawler.items_collected, crawler.items_delivered = stored, delivered
        # billed per data source: the two rss crawlers shared a source that delivered 25
        reports = [
            ("r" * 32, "rss", {str(ana["id"]): 25}),
            ("t" * 32, "twitter", {str(ana["id"]): 90}),
            ("b" * 32, "rss", {str(bob["id"]): 7}),
        ]
        billing.record_sources(
            session,
            [(None, {"run": run, "source": s, "delivered": n}) for run, s, n in reports],
        )

    usage = client.get(f"/api/v1/users/{ana['id']}/usage", headers=bearer(ana["token"])).json
    assert {k: v for k, v in usage.items() if k != "crawlers"} == {
        "user_id": ana["id"],
        "item_limit": 100,
        "items_stored": 60,
        "items_delivered": 115,
        "remaining": 40,
        "by_source": {
            "rss": {"crawlers": 2, "items_stored": 30, "items_delivered": 25},
            "twitter": {"crawlers": 1, "items_stored": 30, "items_delivered": 90},
        },
    }
    assert usage["crawlers"][2] == {
        "id": ids[2],
        "name": "tweets",
        "source": "twitter",
        "state": "pending",
        "item_limit": None,
        "items_collected": 30,
        "items_delivered": 90,
    }
    assert [c["id"] for c in usage["crawlers"]] == ids
    crawler = client.get(f"/api/v1/crawlers/{ids[1]}", headers=bearer(ana["token"])).json
    assert crawler["items_delivered"] == 25

    client.patch(f"/api/v1/users/{ana['id']}", json={"item_limit": 50}, headers=bearer(ADMIN))
    assert usage_of(client, ana)["remaining"] == 0  # never negative
    client.patch(f"/api/v1/users/{ana['id']}", json={"item_limit": None}, headers=bearer(ADMIN))
    assert usage_of(client, ana)["remaining"] is None


def test_a_new_users_usage_is_empty(client: FlaskClient, make_user) -> None:
    ana = make_user("ana")
    assert usage_of(client, ana) == {
        "user_id": ana["id"],
        "item_limit": None,
        "items_stored": 0,
        "items_delivered": 0,
        "remaining": None,
        "by_source": {},
        "crawlers": [],
    }


def usage_of(client: FlaskClient, user: dict[str, Any]) -> dict[str, Any]:
    return client.get(f"/api/v1/users/{user['id']}/usage", headers=bearer(user["token"])).json
