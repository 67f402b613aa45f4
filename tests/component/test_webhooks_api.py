"""Users' webhooks and the deliveries to them through the REST API on a real app and database:
the caller is checked before the body, errors name the field, a user sees only their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blackwidow.alerts import events
from blackwidow.alerts.hooks import MAX_PER_USER
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.app import create_app
from tests.component.conftest import ADMIN, bearer, hub_settings

HOOK = {"url": "http://127.0.0.1:9/hook", "secret": "a-long-secret"}


@pytest.fixture
def hub_app(database_url: str, tmp_path: Path) -> Iterator[Flask]:
    """The hub with loopback allowed, as BLACKWIDOW_FETCH_ALLOW=127.0.0.1 would."""
    settings = hub_settings(database_url, tmp_path, fetch_allow=frozenset({"127.0.0.1"}))
    app = create_app(settings)
    yield app
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()


def hooks_url(user: dict) -> str:
    return f"/api/v1/users/{user['id']}/webhooks"


def test_a_user_creates_lists_and_deletes_webhooks(client: FlaskClient, make_user) -> None:
    ana = make_user("ana")
    created = client.post(hooks_url(ana), json=HOOK, headers=bearer(ana["token"]))
    assert created.status_code == 201
    assert set(created.json) == {"id", "user_id", "url", "created_at"}  # never the secret
    assert created.json["user_id"] == ana["id"] and created.json["url"] == HOOK["url"]
    listed = client.get(hooks_url(ana), headers=bearer(ADMIN))
    assert [h["id"] for h in listed.json] == [created.json["id"]]
    assert "a-long-secret" not in listed.get_data(as_text=True)
    gone = client.delete(f"{hooks_url(ana)}/{created.json['id']}", headers=bearer(ana["token"]))
    assert gone.status_code == 204
    assert client.get(hooks_url(ana), headers=bearer(ana["token"])).json == []


def test_another_users_webhooks_are_missing(client: FlaskClient, make_user) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    hook = client.post(hooks_url(ana), json=HOOK, headers=bearer(ana["token"])).json
    for method, path in [
        ("get", hooks_url(ana)),
        ("post", hooks_url(ana)),
        ("delete", f"{hooks_url(ana)}/{hook['id']}"),
        ("get", f"{hooks_url(ana)}/deliveries"),
    ]:
        response = client.open(path, method=method, json=HOOK, headers=bearer(bob["token"]))
        assert response.status_code == 404 and response.json["error"]["field"] == "id"
    refused = client.delete(f"{hooks_url(bob)}/{hook['id']}", headers=bearer(bob["token"]))
    assert refused.status_code == 404
    assert len(client.get(hooks_url(ana), headers=bearer(ana["token"])).json) == 1


@pytest.mark.parametrize(
    "path", ["/api/v1/users/1/webhooks", "/api/v1/users/1/webhooks/deliveries?limit=0"]
)
def test_a_stranger_gets_401_whatever_the_body(client: FlaskClient, make_user, path) -> None:
    make_user("ana")
    for body in [{}, {"url": "not a url"}, HOOK]:
        response = client.post(path, json=body) if "deliveries" not in path else client.get(path)
        assert response.status_code == 401
        assert response.json["error"]["field"] == "Authorization"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"secret": "a-long-secret"}, "url"),
        ({"url": "ftp://example.com/x", "secret": "a-long-secret"}, "url"),
        ({"url": "http://10.1.2.3/hook", "secret": "a-long-secret"}, "url"),
        ({"url": "http://[::1]:9/hook", "secret": "a-long-secret"}, "url"),
        ({"url": "http://169.254.169.254/latest", "secret": "a-long-secret"}, "url"),
        ({"url": "http://127.0.0.1/hook"}, "secret"),
        ({"url": "http://127.0.0.1/hook", "secret": "short"}, "secret"),
    ],
)
def test_a_bad_webhook_is_a_422_naming_the_field(
    client: FlaskClient, make_user, body, field
) -> None:
    ana = make_user("ana")
    response = client.post(hooks_url(ana), json=body, headers=bearer(ana["token"]))
    assert response.status_code == 422, response.json
    assert response.json["error"]["field"] == field
    assert response.json["error"]["message"].startswith(f"{field}: ")


def test_a_private_address_is_named_in_the_refusal(client: FlaskClient, make_user) -> None:
    ana = make_user("ana")
    body = {"url": "http://10.1.2.3/hook", "secret": "a-long-secret"}
    response = client.post(hooks_url(ana), json=body, headers=bearer(ana["token"]))
    assert "private" in response.json["error"]["message"]


def test_a_user_has_a_bounded_number_of_webhooks(client: FlaskClient, make_user) -> None:
    ana = make_user("ana")
    for _ in range(MAX_PER_USER):
        assert client.post(hooks_url(ana), json=HOOK, headers=bearer(ADMIN)).status_code == 201
    refused = client.post(hooks_url(ana), json=HOOK, headers=bearer(ADMIN))
    assert refused.status_code == 409 and refused.json["error"]["field"] == "url"


def test_deliveries_page_newest_first_with_a_next_link(
    client: FlaskClient, make_user, sessions
) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    client.post(hooks_url(ana), json=HOOK, headers=bearer(ana["token"]))
    with sessions.begin() as session:
        AlertOutbox(cluster_hook=True).emit(
            session,
            [events.crawler_failed(n, ana["id"], "refused") for n in range(5)]
            + [events.crawler_failed(99, bob["id"], "refused")],
        )
    url = f"{hooks_url(ana)}/deliveries?limit=3"
    first = client.get(url, headers=bearer(ana["token"]))
    assert first.status_code == 200 and len(first.json) == 3
    assert [d["id"] for d in first.json] == sorted((d["id"] for d in first.json), reverse=True)
    assert {d["type"] for d in first.json} == {"crawler.failed"}
    assert {d["status"] for d in first.json} == {"pending"}
    link = first.headers["Link"]
    assert link.endswith('>; rel="next"')
    second = client.get(link[1 : link.index(">")], headers=bearer(ana["token"]))
    assert len(second.json) == 2 and "Link" not in second.headers
    assert all(d["webhook_id"] is not None for d in first.json + second.json)

    cluster = client.get("/api/v1/webhooks/deliveries", headers=bearer(ADMIN))
    assert len(cluster.json) == 6 and {d["webhook_id"] for d in cluster.json} == {None}
    refused = client.get("/api/v1/webhooks/deliveries", headers=bearer(ana["token"]))
    assert refused.status_code == 403
    bad = client.get(f"{hooks_url(ana)}/deliveries?limit=0", headers=bearer(ana["token"]))
    assert bad.status_code == 422 and bad.json["error"]["field"] == "limit"
