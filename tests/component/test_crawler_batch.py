"""Batch create (POST /api/v1/crawlers/batch) on a real app and database: entries in order,
all or none, errors naming the entry, each entry exactly as a single create makes it."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from blackwidow import changes
from blackwidow.api.schemas import MAX_BATCH
from tests.component.conftest import ADMIN, bearer
from tests.support import every_page

BATCH = "/api/v1/crawlers/batch"


def rss(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": f"news {n}",
        "source": "rss",
        "query": {"feeds": [f"https://feed{n}.example/rss"]},
        **extra,
    }


def listed(client: FlaskClient, token: str) -> list[dict[str, Any]]:
    return every_page(lambda url: client.get(url, headers=bearer(token)), "/api/v1/crawlers")


def test_a_batch_creates_every_entry_in_order(client, make_user, sessions):
    token = make_user()["token"]
    entries = [rss(n) for n in range(5)]
    entries[2] = rss(2, enabled=False, item_limit=9, priority="high")
    response = client.post(BATCH, json={"crawlers": entries}, headers=bearer(token))
    assert response.status_code == 201, response.json
    made = response.json["crawlers"]
    assert [c["name"] for c in made] == [f"news {n}" for n in range(5)]
    assert [c["id"] for c in made] == sorted(c["id"] for c in made)
    assert made[2]["state"] == "disabled" and made[2]["item_limit"] == 9
    assert made[2]["priority"] == "high" and made[0]["state"] == "pending"
    assert listed(client, token) == made
    with sessions.begin() as session:
        recorded = [(crawler, key) for _id, crawler, key in changes.pending(session)]
    assert recorded == [(c["id"], c["uuid"]) for c in made]  # the monitor hears of each


def test_each_entry_is_what_a_single_create_makes(client, make_user):
    token = make_user()["token"]
    body = rss(1, item_limit=5, retention_days=30)
    single = client.post("/api/v1/crawlers", json=body, headers=bearer(token)).json
    again = {**body, "name": f"{body['name']} again"}  # names are unique per user
    batched = client.post(BATCH, json={"crawlers": [again]}, headers=bearer(token)).json
    (entry,) = batched["crawlers"]
    assert entry["id"] != single["id"] and entry["name"] == again["name"]
    assert {**entry, "id": single["id"], "name": single["name"]} == single


@pytest.mark.parametrize(
    ("fault", "field"),
    [
        ({"query": {"feeds": ["not a url"]}}, "crawlers.3.query.feeds.0"),
        ({"query": {"feeds": ["https://a.example/x"], "extra": 1}}, "crawlers.3.query.extra"),
        ({"name": ""}, "crawlers.3.name"),
        ({"source": "gopher"}, "crawlers.3.source"),
        ({"item_limit": -1}, "crawlers.3.item_limit"),
        ({"owner": 7}, "crawlers.3.owner"),
    ],
)
def test_one_bad_entry_names_itself_and_creates_nothing(client, make_user, sessions, fault, field):
    token = make_user()["token"]
    entries = [rss(n) for n in range(6)]
    entries[3] = {**entries[3], **fault}
    response = client.post(BATCH, json={"crawlers": entries}, headers=bearer(token))
    assert response.status_code == 422, response.json
    assert response.json["error"]["code"] == "invalid"
    assert response.json["error"]["field"] == field
    assert response.json["error"]["message"].startswith(f"{field}: ")
    assert listed(client, token) == []
    with sessions.begin() as session:
        assert changes.pending(session) == []


@pytest.mark.parametrize(
    "body",
    [{}, {"crawlers": []}, {"crawlers": {"name": "x"}}, {"crawlers": [rss(0)] * (MAX_BATCH + 1)}],
    ids=["missing", "empty", "not a list", "too many"],
)
def test_a_batch_must_hold_one_to_the_most_entries(client, make_user, body):
    token = make_user()["token"]
    response = client.post(BATCH, json=body, headers=bearer(token))
    assert response.status_code == 422, response.json
    assert response.json["error"]["field"] == "crawlers"
    assert listed(client, token) == []


def test_the_largest_batch_is_created(client, make_user):
    token = make_user()["token"]
    entries = [rss(n) for n in range(MAX_BATCH)]
    response = client.post(BATCH, json={"crawlers": entries}, headers=bearer(token))
    assert response.status_code == 201, response.json
    assert len(response.json["crawlers"]) == MAX_BATCH
    assert len(listed(client, token)) == MAX_BATCH


@pytest.mark.parametrize(("token", "status"), [(ADMIN, 403), ("wrong", 401)])
def test_a_batch_needs_a_user_token(client, make_user, token, status):
    owner = make_user()["token"]
    response = client.post(BATCH, json={"crawlers": [rss(0)]}, headers=bearer(token))
    assert response.status_code == status, response.json
    assert listed(client, owner) == []


def test_the_batch_is_in_the_openapi_description(client):
    spec = client.get("/api/v1/openapi.json").json
    operation = spec["paths"]["/api/v1/crawlers/batch"]["post"]
    assert "201" in operation["responses"] and "422" in operation["responses"]
    batch = spec["components"]["schemas"]["CrawlerBatch"]["properties"]["crawlers"]
    assert batch["maxItems"] == MAX_BATCH and batch["minItems"] == 1
