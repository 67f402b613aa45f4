"""Crawler changes through the REST API on a real app and database: every write that changes
what a crawler runs with leaves change rows in its own transaction, naming the source keys
the monitor shards read them by; a refused write leaves none."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import changes
from blackwidow.models import Crawler
from tests.component.conftest import ADMIN, bearer

NAMES = itertools.count(1)  # crawler names, unique per user as the hub wants

FEED = "https://example.com/feed.xml"
OTHER_FEED = "https://example.org/other.xml"
TWITTER = {"bearer_token": "a-bearer-token-of-the-users-own-app"}


def rss(feeds: tuple[str, ...] = (FEED,), **extra: Any) -> dict[str, Any]:
    body = {"name": f"news {next(NAMES)}", "source": "rss", "query": {"feeds": list(feeds)}}
    return {**body, **extra}


def tweets(credential: str = "default") -> dict[str, Any]:
    return {
        "name": f"tweets {next(NAMES)}",
        "source": "twitter",
        "query": {"terms": ["x"], "credential": credential},
    }


def take(sessions: sessionmaker[Session]) -> list[tuple[int, str]]:
    """(crawler id, source key) of every change recorded, oldest first; as the monitor does,
    the rows read are forgotten."""
    with sessions.begin() as session:
        rows = changes.pending(session)
        changes.taken(session, [change_id for change_id, _crawler, _key in rows])
    return [(crawler_id, key) for _id, crawler_id, key in rows]


def key_of(sessions: sessionmaker[Session], crawler_id: int) -> str:
    with sessions() as session:
        return session.scalars(select(Crawler.uuid).where(Crawler.id == crawler_id)).one()


def create(client: FlaskClient, token: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
    assert response.status_code == 201, response.json
    return response.json


def test_a_created_crawler_is_recorded_with_its_source_key(client, make_user, sessions):
    token = make_user()["token"]
    crawler = create(client, token, rss())
    assert take(sessions) == [(crawler["id"], crawler["uuid"])]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (rss(feeds=("file:///etc/passwd",)), "query.feeds.0"),
        (rss(priority="urgent"), "priority"),
        (rss(item_limit=0), "item_limit"),
        ({"name": "n", "source": "gopher", "query": {}}, "source"),
    ],
)
def test_a_refused_create_records_nothing(client, make_user, sessions, body, field):
    token = make_user()["token"]
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
    assert response.status_code == 422 and response.json["error"]["field"] == field
    assert take(sessions) == []


@pytest.mark.parametrize(
    "edit",
    [
        {"name": "renamed"},
        {"item_limit": 7},
        {"item_limit": None},
        {"retention_days": 3},
        {"enabled": False},
        {"priority": "high"},
        {"query": {"feeds": [FEED], "keywords": ["python"]}},  # same source key
    ],
)
def test_every_edit_is_recorded_once(client, make_user, sessions, edit):
    token = make_user()["token"]
    crawler = create(client, token, rss())
    take(sessions)
    response = client.patch(f"/api/v1/crawlers/{crawler['id']}", json=edit, headers=bearer(token))
    assert response.status_code == 200, response.json
    assert take(sessions) == [(crawler["id"], crawler["uuid"])]


def test_a_new_source_key_is_recorded_under_both_keys(client, make_user, sessions):
    """The shard that owned the old key removes the crawler; the new key's shard places it."""
    token = make_user()["token"]
    crawler = create(client, token, rss())
    take(sessions)
    edit = {"query": {"feeds": [OTHER_FEED]}}
    moved = client.patch(f"/api/v1/crawlers/{crawler['id']}", json=edit, headers=bearer(token))
    assert moved.json["uuid"] != crawler["uuid"]
    assert sorted(take(sessions)) == sorted(
        [(crawler["id"], moved.json["uuid"]), (crawler["id"], crawler["uuid"])]
    )


@pytest.mark.parametrize(
    ("edit", "status", "field"),
    [
        ({"query": {"feeds": ["ftp://x/y"]}}, 422, "query.feeds.0"),
        ({"priority": "urgent"}, 422, "priority"),
        ({"priority": None}, 422, "priority"),
        ({"enabled": "maybe"}, 422, "enabled"),
    ],
)
def test_a_refused_edit_records_nothing(client, make_user, sessions, edit, status, field):
    token = make_user()["token"]
    crawler = create(client, token, rss())
    take(sessions)
    response = client.patch(f"/api/v1/crawlers/{crawler['id']}", json=edit, headers=bearer(token))
    assert response.status_code == status and response.json["error"]["field"] == field
    assert take(sessions) == []
    assert client.get(f"/api/v1/crawlers/{crawler['id']}", headers=bearer(token)).json == crawler


def test_an_empty_edit_changes_nothing_and_records_nothing(client, make_user, sessions):
    token = make_user()["token"]
    crawler = create(client, token, rss())
    take(sessions)
    response = client.patch(f"/api/v1/crawlers/{crawler['id']}", json={}, headers=bearer(token))
    assert response.status_code == 200 and take(sessions) == []


def test_a_deleted_crawler_is_recorded_with_the_key_it_had(client, make_user, sessions):
    token = make_user()["token"]
    crawler = create(client, token, rss())
    take(sessions)
    response = client.delete(f"/api/v1/crawlers/{crawler['id']}", headers=bearer(token))
    assert response.status_code == 204
    assert take(sessions) == [(crawler["id"], crawler["uuid"])]


def test_another_users_crawler_is_neither_changed_nor_recorded(client, make_user, sessions):
    owner, stranger = make_user("ana")["token"], make_user("bob")["token"]
    crawler = create(client, owner, rss())
    take(sessions)
    url = f"/api/v1/crawlers/{crawler['id']}"
    assert client.patch(url, json={"name": "x"}, headers=bearer(stranger)).status_code == 404
    assert client.delete(url, headers=bearer(stranger)).status_code == 404
    assert take(sessions) == []


def test_a_users_new_budget_records_all_their_crawlers_and_no_one_elses(
    client, make_user, sessions
):
    ana, bob = make_user("ana"), make_user("bob")
    mine = [create(client, ana["token"], rss(feeds=(f"https://e.com/{n}",))) for n in range(3)]
    create(client, bob["token"], rss())
    take(sessions)
    url = f"/api/v1/users/{ana['id']}"
    assert client.patch(url, json={"item_limit": 10}, headers=bearer(ADMIN)).status_code == 200
    assert sorted(take(sessions)) == sorted((c["id"], c["uuid"]) for c in mine)
    # the same budget again changes nothing; a refused one neither
    assert client.patch(url, json={"item_limit": 10}, headers=bearer(ADMIN)).status_code == 200
    assert client.patch(url, json={"item_limit": -1}, headers=bearer(ADMIN)).status_code == 422
    assert (
        client.patch(url, json={"item_limit": 5}, headers=bearer(ana["token"])).status_code == 403
    )
    assert take(sessions) == []


def test_storing_replacing_and_removing_a_credential_records_the_crawlers_naming_it(
    client, make_user, sessions
):
    user = make_user()
    token = user["token"]
    naming = create(client, token, tweets("mine"))
    create(client, token, tweets("default"))  # names another credential
    create(client, token, rss())
    take(sessions)
    url = f"/api/v1/users/{user['id']}/credentials/twitter/mine"
    shared_key = naming["uuid"]  # the nodes' credential, shared by all who name it

    assert client.put(url, json=TWITTER, headers=bearer(token)).status_code == 201
    own_key = key_of(sessions, naming["id"])
    assert own_key != shared_key
    assert sorted(take(sessions)) == sorted([(naming["id"], own_key), (naming["id"], shared_key)])

    replaced = {"bearer_token": "another-bearer-token-of-the-users-app"}
    assert client.put(url, json=replaced, headers=bearer(token)).status_code == 200
    assert take(sessions) == [(naming["id"], own_key)]  # same key, a new secret pushed

    assert client.delete(url, headers=bearer(token)).status_code == 204
    assert key_of(sessions, naming["id"]) == shared_key
    assert sorted(take(sessions)) == sorted([(naming["id"], shared_key), (naming["id"], own_key)])


def test_a_refused_credential_records_nothing(client, make_user, sessions):
    user = make_user()
    token = user["token"]
    create(client, token, tweets("mine"))
    take(sessions)
    url = f"/api/v1/users/{user['id']}/credentials/twitter/mine"
    assert client.put(url, json={"bearer_token": ""}, headers=bearer(token)).status_code == 422
    assert client.delete(url, headers=bearer(token)).status_code == 404
    assert take(sessions) == []


def test_reads_record_nothing(client, make_user, sessions):
    user = make_user()
    token = user["token"]
    crawler = create(client, token, rss())
    take(sessions)
    for url in (
        "/api/v1/crawlers",
        f"/api/v1/crawlers/{crawler['id']}",
        f"/api/v1/users/{user['id']}",
        f"/api/v1/users/{user['id']}/usage",
        f"/api/v1/users/{user['id']}/credentials",
        "/api/v1/health",
    ):
        assert client.get(url, headers=bearer(token)).status_code == 200, url
    assert take(sessions) == []
