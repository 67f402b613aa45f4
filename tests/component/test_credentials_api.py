"""Stored credentials through the REST API on a real app and database: storing, listing and
removing them, the source keys of the crawlers that name them, and secrets never shown."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from blackwidow.models import Crawler, Credential
from sources.keys import source_key
from tests.component.conftest import ADMIN, SECRET, bearer

TOKEN = "AAAA-recognisable-bearer-secret-ZZZZ"
TWITTER = {"bearer_token": TOKEN}
DATASIFT = {"endpoint": "https://stream.example/v1", "auth_value": "ds-secret-value-1234"}


def credentials_url(user: dict[str, Any], source: str = "", name: str = "") -> str:
    url = f"/api/v1/users/{user['id']}/credentials"
    return f"{url}/{source}/{name}" if source else url


def twitter_crawler(name: str = "tweets", credential: str | None = None) -> dict[str, Any]:
    query: dict[str, Any] = {"terms": ["python"]}
    if credential is not None:
        query["credential"] = credential
    return {"name": name, "source": "twitter", "query": query}


def create_crawler(client: FlaskClient, user: dict[str, Any], body: dict[str, Any]) -> Any:
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(user["token"]))
    assert response.status_code == 201, response.json
    return response.json


def test_store_list_replace_and_remove(client: FlaskClient, make_user) -> None:
    ana = make_user("ana")
    auth = bearer(ana["token"])
    created = client.put(credentials_url(ana, "twitter", "default"), json=TWITTER, headers=auth)
    assert created.status_code == 201, created.json
    described = created.json
    assert described["source"] == "twitter" and described["name"] == "default"
    assert described["fields"] == sorted(described["fields"])
    assert {"bearer_token", "api_base", "tier"} <= set(described["fields"])  # defaults kept
    assert set(described) == {"source", "name", "fields", "updated_at"}
    client.put(credentials_url(ana, "datasift", "paid"), json=DATASIFT, headers=auth)
    listed = client.get(credentials_url(ana), headers=auth).json
    assert [(c["source"], c["name"]) for c in listed] == [
        ("datasift", "paid"),
        ("twitter", "default"),
    ]
    assert listed[1] == described

    replaced = client.put(
        credentials_url(ana, "twitter", "default"), json={"bearer_token": "other"}, headers=auth
    )
    assert replaced.status_code == 200 and replaced.json["updated_at"] >= described["updated_at"]

    assert (
        client.delete(credentials_url(ana, "twitter", "default"), headers=auth).status_code == 204
    )
    again = client.delete(credentials_url(ana, "twitter", "default"), headers=auth)
    assert again.status_code == 404 and again.json["error"]["field"] == "name"
    assert [c["name"] for c in client.get(credentials_url(ana), headers=auth).json] == ["paid"]


def test_the_admin_manages_any_users_credentials(client: FlaskClient, make_user) -> None:
    ana = make_user("ana")
    url = credentials_url(ana, "twitter", "default")
    assert client.put(url, json=TWITTER, headers=bearer(ADMIN)).status_code == 201
    assert len(client.get(credentials_url(ana), headers=bearer(ana["token"])).json) == 1
    assert client.delete(url, headers=bearer(ADMIN)).status_code == 204


def test_no_token_another_user_and_an_unknown_user(client: FlaskClient, make_user) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    url = credentials_url(ana, "twitter", "default")
    assert client.put(url, json=TWITTER).status_code == 401
    assert client.put(url, json=TWITTER, headers=bearer(SECRET)).status_code == 401
    refused = client.put(url, json=TWITTER, headers=bearer(bob["token"]))
    assert refused.status_code == 404 and refused.json["error"]["field"] == "id"
    for user_id in (999, 2**31, 2**64):
        missing = client.get(f"/api/v1/users/{user_id}/credentials", headers=bearer(ADMIN))
        assert missing.status_code == 404 and missing.json["error"]["field"] == "id"
    assert client.get(credentials_url(ana), headers=bearer(ana["token"])).json == []


@pytest.mark.parametrize(
    ("source", "name", "body", "status", "field"),
    [
        ("twitter", "default", {}, 422, "bearer_token"),
        ("twitter", "default", {"bearer_token": ""}, 422, "bearer_token"),
        ("twitter", "default", {**TWITTER, "tier": "gold"}, 422, "tier"),
        ("twitter", "default", {**TWITTER, "api_base": "ftp://x"}, 422, "api_base"),
        ("twitter", "default", {**TWITTER, "max_rules": "5"}, 422, "max_rules"),
        ("twitter", "default", {**TWITTER, "owner": 3}, 422, "owner"),
        ("datasift", "paid", {"auth_value": "v"}, 422, "endpoint"),
        ("datasift", "paid", {**DATASIFT, "auth_header": "a b"}, 422, "auth_header"),
        ("twitter", "-leading-dash", TWITTER, 422, "name"),
        ("twitter", "x" * 65, TWITTER, 422, "name"),
        ("twitter", "a%00b", TWITTER, 422, "name"),
        ("rss", "default", TWITTER, 404, "source"),
        ("gopher", "default", TWITTER, 404, "source"),
    ],
)
def test_bad_credentials_name_the_field_and_store_nothing(
    client: FlaskClient, make_user, source: str, name: str, body: Any, status: int, field: str
) -> None:
    ana = make_user("ana")
    response = client.put(
        credentials_url(ana, source, name), json=body, headers=bearer(ana["token"])
    )
    assert response.status_code == status, response.json
    assert response.json["error"]["field"] == field
    assert client.get(credentials_url(ana), headers=bearer(ana["token"])).json == []


@pytest.mark.parametrize(
    ("source", "body"),
    [
        ("twitter", {"bearer_token": TOKEN * 100}),  # too long
        ("twitter", {"bearer_token": [TOKEN]}),
        ("twitter", {"bearer_token": "ok", "api_base": f"https://user:{TOKEN}@x.example"}),
        ("twitter", {"bearer_token": "ok", "tier": TOKEN}),
        ("datasift", {"endpoint": f"not a url {TOKEN}", "auth_value": TOKEN}),
        ("datasift", {"endpoint": "https://x.example", "auth_value": f"{TOKEN}\n"}),
        ("datasift", {**DATASIFT, "query_param": TOKEN + "!"}),
    ],
)
def test_refusals_never_echo_the_secret(
    client: FlaskClient, make_user, source: str, body: dict[str, Any]
) -> None:
    ana = make_user("ana")
    response = client.put(
        credentials_url(ana, source, "x"), json=body, headers=bearer(ana["token"])
    )
    assert response.status_code == 422, response.json
    assert TOKEN not in response.get_data(as_text=True)


def test_a_crawlers_source_key_follows_its_users_credential(client: FlaskClient, make_user) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    query = {"terms": ["python"], "languages": [], "mode": "stream", "credential": "default"}
    shared, own = source_key("twitter", query), source_key("twitter", query, ana["id"])
    before = create_crawler(client, ana, twitter_crawler())
    other_name = create_crawler(client, ana, twitter_crawler("other", credential="spare"))
    bobs = create_crawler(client, bob, twitter_crawler())
    assert before["uuid"] == bobs["uuid"] == shared  # both use the nodes' own credential

    url = credentials_url(ana, "twitter", "default")
    client.put(url, json=TWITTER, headers=bearer(ana["token"]))
    assert uuid_of(client, ana, before) == own != shared
    assert uuid_of(client, ana, other_name) == other_name["uuid"]  # names another credential
    assert uuid_of(client, bob, bobs) == shared  # another user's crawler is not touched
    after = create_crawler(client, ana, twitter_crawler("after"))
    assert after["uuid"] == own

    renamed = client.patch(
        f"/api/v1/crawlers/{other_name['id']}",
        json={"query": {"terms": ["python"]}},
        headers=bearer(ana["token"]),
    )
    assert renamed.json["uuid"] == own  # the default credential, which ana stored

    client.delete(url, headers=bearer(ana["token"]))
    assert {uuid_of(client, ana, c) for c in (before, after, other_name)} == {shared}


def test_storing_a_credential_gives_a_failed_crawler_another_chance(
    client: FlaskClient, make_user, sessions
) -> None:
    """A node refuses a spec whose credential it cannot find: the crawler fails, and stays
    failed until something changes. Storing the credential is such a change."""
    ana = make_user("ana")
    crawler = create_crawler(client, ana, twitter_crawler())
    with sessions.begin() as session:
        failed = session.get(Crawler, crawler["id"])
        failed.state, failed.last_error = "failed", "no twitter credential named 'default'"
    client.put(
        credentials_url(ana, "twitter", "default"), json=TWITTER, headers=bearer(ana["token"])
    )
    again = client.get(f"/api/v1/crawlers/{crawler['id']}", headers=bearer(ana["token"])).json
    assert again["state"] == "pending" and again["last_error"] is None


def test_the_secret_is_never_in_an_answer(
    client: FlaskClient, make_user, sessions, serve_node
) -> None:
    ana = make_user("ana", item_limit=100)
    auth = bearer(ana["token"])
    stored = client.put(credentials_url(ana, "twitter", "default"), json=TWITTER, headers=auth)
    client.put(credentials_url(ana, "twitter", "default"), json=TWITTER, headers=auth)
    crawler = create_crawler(client, ana, twitter_crawler())
    client.post("/api/v1/nodes", json={"url": serve_node()}, headers=bearer(SECRET))
    answers = [
        stored,
        client.get(credentials_url(ana), headers=auth),
        client.get(credentials_url(ana), headers=bearer(ADMIN)),
        client.get(f"/api/v1/crawlers/{crawler['id']}", headers=auth),
        client.get("/api/v1/crawlers", headers=auth),
        client.get("/api/v1/crawlers", headers=bearer(ADMIN)),
        client.get(f"/api/v1/users/{ana['id']}", headers=auth),
        client.get(f"/api/v1/users/{ana['id']}/usage", headers=auth),
        client.get("/api/v1/health"),
        client.get("/api/v1/nodes", headers=bearer(ADMIN)),
        client.get("/api/v1/nodes/count"),
        client.get("/api/v1/openapi.json"),
        client.get("/healthz"),
    ]
    for answer in answers:
        assert answer.status_code < 400, (answer.request.path, answer.json)
        assert TOKEN not in answer.get_data(as_text=True), answer.request.path
    with sessions() as session:
        credential = session.scalars(select(Credential)).one()
        assert credential.secret["bearer_token"] == TOKEN  # stored: nodes need it
        assert TOKEN not in repr(credential)


def test_a_database_error_does_not_print_the_secret(make_user, sessions) -> None:
    """Errors are logged with their message: SQL parameters must not be in it."""
    ana = make_user("ana")
    with pytest.raises(IntegrityError) as raised, sessions.begin() as session:
        for _ in range(2):
            session.add(Credential(user_id=ana["id"], source="twitter", name="n", secret=TWITTER))
            session.flush()
    assert TOKEN not in str(raised.value)


def uuid_of(client: FlaskClient, user: dict[str, Any], crawler: dict[str, Any]) -> str:
    url = f"/api/v1/crawlers/{crawler['id']}"
    return client.get(url, headers=bearer(user["token"])).json["uuid"]
