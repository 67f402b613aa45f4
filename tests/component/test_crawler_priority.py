"""A crawler's priority through the REST API: accepted on create and edit, checked by name,
shown in the crawler, described in OpenAPI, and carried in the spec pushed to its node."""

from __future__ import annotations

import pytest

from blackwidow.core.node_protocol import Shard
from blackwidow.monitor import desired
from blackwidow.monitor.memory.crawlers import load
from sources.model import PRIORITIES
from tests.component.conftest import bearer

RSS = {"name": "news", "source": "rss", "query": {"feeds": ["https://example.com/feed.xml"]}}


def test_a_crawler_is_normal_unless_told_otherwise(client, make_user):
    token = make_user()["token"]
    created = client.post("/api/v1/crawlers", json=RSS, headers=bearer(token))
    assert created.status_code == 201 and created.json["priority"] == "normal"


@pytest.mark.parametrize("priority", list(PRIORITIES))
def test_each_priority_is_kept_and_shown(client, make_user, priority):
    token = make_user()["token"]
    created = client.post(
        "/api/v1/crawlers", json={**RSS, "priority": priority}, headers=bearer(token)
    )
    assert created.status_code == 201 and created.json["priority"] == priority
    url = f"/api/v1/crawlers/{created.json['id']}"
    assert client.get(url, headers=bearer(token)).json["priority"] == priority
    assert client.get("/api/v1/crawlers", headers=bearer(token)).json[0]["priority"] == priority


def test_an_edit_changes_the_priority_and_nothing_else(client, make_user):
    token = make_user()["token"]
    created = client.post("/api/v1/crawlers", json=RSS, headers=bearer(token)).json
    url = f"/api/v1/crawlers/{created['id']}"
    edited = client.patch(url, json={"priority": "low"}, headers=bearer(token))
    assert edited.status_code == 200 and edited.json == {**created, "priority": "low"}


@pytest.mark.parametrize("bad", ["urgent", "HIGH", "", None, 2, ["high"]])
def test_a_priority_not_named_is_refused_naming_the_field(client, make_user, bad):
    token = make_user()["token"]
    refused = client.post("/api/v1/crawlers", json={**RSS, "priority": bad}, headers=bearer(token))
    assert refused.status_code == 422 and refused.json["error"]["field"] == "priority"
    created = client.post("/api/v1/crawlers", json=RSS, headers=bearer(token)).json
    url = f"/api/v1/crawlers/{created['id']}"
    edited = client.patch(url, json={"priority": bad}, headers=bearer(token))
    assert edited.status_code == 422 and edited.json["error"]["field"] == "priority"
    assert client.get(url, headers=bearer(token)).json["priority"] == "normal"


def test_openapi_names_the_priorities(client):
    schemas = client.get("/api/v1/openapi.json").json["components"]["schemas"]
    for name in ("CrawlerCreate", "CrawlerUpdate"):
        assert schemas[name]["properties"]["priority"]["enum"] == list(PRIORITIES)
    assert schemas["CrawlerCreate"]["properties"]["priority"]["default"] == "normal"
    assert "priority" in schemas["CrawlerOut"]["properties"]


def test_the_spec_pushed_carries_the_priority(client, make_user, sessions):
    token = make_user()["token"]
    created = client.post(
        "/api/v1/crawlers", json={**RSS, "priority": "high"}, headers=bearer(token)
    )
    with sessions() as session:
        tracked = load(session, Shard(), [created.json["id"]])[created.json["id"]]
    assert desired.spec(tracked, lease=None, secret=None).priority == "high"
