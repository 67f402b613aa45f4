"""The dashboard on the real app: sign-in and its cookie, CSRF on every form, and the same
tenant isolation as the REST API, route by route from the access table (test_access.py)."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blackwidow.alerts import events
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.models import Crawler, MonitorLock, Node, utcnow
from tests.component.conftest import ADMIN, bearer
from tests.component.test_access import (
    ACCESS,
    PRIVATE,
    Access,
    Via,
    World,
    route_id,
    routes_of,
    snapshot,
    world,
)

__all__ = ["world"]  # the access tests' fixture: two users, a crawler and an item each

SIGNED_IN_ROUTES = [
    r for r, rule in ACCESS.items() if rule.via is Via.SESSION and rule.access is not Access.ANYONE
]


def csrf_of(page: Any) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
    assert found, page.get_data(as_text=True)[:500]
    return found.group(1)


def sign_in(client: FlaskClient, token: str) -> str:
    """Sign in through the form; the CSRF token of the new session, for later forms."""
    form = client.get("/signin")
    signed = client.post("/signin", data={"token": token, "csrf_token": csrf_of(form)})
    assert signed.status_code == 303, signed.get_data(as_text=True)
    return csrf_of(client.get("/crawlers"))


def send(client: FlaskClient, route: tuple[str, str], path: str, csrf: str | None) -> Any:
    data = dict(ACCESS[route].body or {})
    if csrf is not None and route[0] == "POST":
        data["csrf_token"] = csrf
    return client.open(path, method=route[0], data=data or None)


def test_sign_in_sets_a_strict_http_only_cookie_holding_no_token(
    client: FlaskClient, world: World
) -> None:
    form = client.get("/signin")
    answer = client.post("/signin", data={"token": ADMIN, "csrf_token": csrf_of(form)})
    assert answer.status_code == 303 and answer.headers["Location"] == "/"
    cookie = answer.headers["Set-Cookie"]
    assert "blackwidow_session=" in cookie and "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie and "Secure" not in cookie  # plain http here
    assert ADMIN not in cookie
    over_https = client.get("/signin", base_url="https://hub.example")
    assert "Secure" in over_https.headers["Set-Cookie"]


def test_a_wrong_token_signs_nobody_in(client: FlaskClient, world: World) -> None:
    for token in ("", "not-a-token", f"{ADMIN}x", "x" * 600):
        form = client.get("/signin")
        refused = client.post("/signin", data={"token": token, "csrf_token": csrf_of(form)})
        assert refused.status_code == 401
        assert client.get("/").status_code == 303


def test_sign_out_ends_the_session(client: FlaskClient, world: World) -> None:
    csrf = sign_in(client, world.ana["token"])
    assert client.get("/").status_code == 200
    assert client.post("/signout", data={"csrf_token": csrf}).status_code == 303
    assert client.get("/").headers["Location"].startswith("/signin")


def test_sign_in_goes_back_only_to_pages_of_this_hub(client: FlaskClient, world: World) -> None:
    for wanted, landing in [
        ("/crawlers?state=pending", "/crawlers?state=pending"),
        ("https://evil.example/", "/"),
        ("//evil.example/", "/"),
    ]:
        form = client.get("/signin", query_string={"next": wanted})
        data = {"token": ADMIN, "csrf_token": csrf_of(form), "next": wanted}
        assert client.post("/signin", data=data).headers["Location"] == landing


@pytest.mark.parametrize("route", SIGNED_IN_ROUTES, ids=route_id)
def test_pages_without_a_session_send_to_sign_in_and_change_nothing(
    hub_app: Flask, client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    before = snapshot(hub_app, world)
    client.get("/signin")  # an anonymous session with a CSRF token, as a stranger would have
    for headers in ({}, bearer(ADMIN), bearer(world.ana["token"])):  # the API's tokens: no
        answer = client.open(
            world.path(route[1]), method=route[0], data=ACCESS[route].body, headers=headers
        )
        assert answer.status_code == 303, answer.status_code
        assert answer.headers["Location"].startswith("/signin")
    assert snapshot(hub_app, world) == before


@pytest.mark.parametrize("route", [r for r in SIGNED_IN_ROUTES if r[0] == "POST"], ids=route_id)
def test_forms_without_the_csrf_token_are_refused_and_change_nothing(
    hub_app: Flask, client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    csrf = sign_in(client, world.ana["token"])
    before = snapshot(hub_app, world)
    for token in (None, "forged", csrf[:-2] + "xx"):
        refused = send(client, route, world.path(route[1]), token)
        assert refused.status_code == 400, refused.status_code
        assert "refused" in refused.get_data(as_text=True)
    assert snapshot(hub_app, world) == before
    assert client.get("/").status_code == 200  # still signed in


def test_the_sign_in_form_needs_its_csrf_token(client: FlaskClient, world: World) -> None:
    assert client.post("/signin", data={"token": ADMIN}).status_code == 400
    assert client.get("/").status_code == 303


@pytest.mark.parametrize("route", routes_of(Access.OWNER, Via.SESSION), ids=route_id)
def test_another_users_crawler_is_missing_from_the_dashboard(
    hub_app: Flask, client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    csrf = sign_in(client, world.bob["token"])
    before = snapshot(hub_app, world)
    refused = send(client, route, world.path(route[1]), csrf)
    missing = send(client, route, world.path(route[1], crawler_id=999_999), csrf)
    assert refused.status_code == missing.status_code == 404
    assert PRIVATE not in refused.get_data(as_text=True)
    assert snapshot(hub_app, world) == before
    client.post("/signout", data={"csrf_token": csrf})
    csrf = sign_in(client, world.ana["token"])
    assert send(client, route, world.path(route[1]), csrf).status_code in (200, 303)


@pytest.mark.parametrize("route", routes_of(Access.CALLER, Via.SESSION), ids=route_id)
def test_pages_show_the_callers_own_only(
    client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    csrf = sign_in(client, world.bob["token"])
    page = send(client, route, world.path(route[1]), csrf)
    assert page.status_code in (200, 303)
    assert PRIVATE not in page.get_data(as_text=True)


def test_the_admin_sees_every_crawler_and_user(client: FlaskClient, world: World) -> None:
    sign_in(client, ADMIN)
    crawlers = client.get("/crawlers").get_data(as_text=True)
    assert f"{PRIVATE}-crawler" in crawlers and "bob-crawler" in crawlers
    users = client.get("/users").get_data(as_text=True)
    assert "ana" in users and "bob" in users


def test_crawler_filters_are_checked_as_the_list_endpoint_checks_them(
    client: FlaskClient, world: World
) -> None:
    sign_in(client, ADMIN)
    page = client.get("/crawlers", query_string={"state": "run\x00ning", "source": "rss"})
    assert page.status_code == 200
    assert "state: not a value to filter by" in page.get_data(as_text=True)
    assert "bob-crawler" in page.get_data(as_text=True)  # the list, unfiltered
    api = client.get("/api/v1/crawlers?state=run%00ning", headers=bearer(ADMIN))
    assert api.status_code == 422 and api.json["error"]["field"] == "state"


def test_a_limit_form_goes_through_the_patch_validation(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    """A bad value is refused naming the field, and nothing is written, not even the other
    field of the same form."""
    csrf = sign_in(client, world.ana["token"])
    crawler_id = world.ana_crawler["id"]
    before = snapshot(hub_app, world)
    for bad, said in [
        ("ten", "item_limit: Not a valid integer."),
        ("0", "item_limit: Must be greater than or equal to 1"),
        ("99999999999999999999", "item_limit: Not a valid integer."),
    ]:
        data = {"item_limit": bad, "enabled": "false", "csrf_token": csrf}
        client.post(f"/crawlers/{crawler_id}/edit", data=data)
        assert said in client.get("/crawlers").get_data(as_text=True)
        assert snapshot(hub_app, world) == before
    data = {"item_limit": "25", "enabled": "false", "csrf_token": csrf}
    assert client.post(f"/crawlers/{crawler_id}/edit", data=data).status_code == 303
    changed = client.get(f"/api/v1/crawlers/{crawler_id}", headers=bearer(world.ana["token"]))
    assert changed.json["item_limit"] == 25 and changed.json["state"] == "disabled"
    data = {"item_limit": "", "csrf_token": csrf}
    client.post(f"/crawlers/{crawler_id}/edit", data=data)
    cleared = client.get(f"/api/v1/crawlers/{crawler_id}", headers=bearer(world.ana["token"]))
    assert cleared.json["item_limit"] is None


def test_pages_forbid_framing_and_foreign_scripts(client: FlaskClient, world: World) -> None:
    sign_in(client, world.ana["token"])
    headers = client.get("/").headers
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"


def pages_of_everyone(client: FlaskClient, world: World, path: str) -> dict[str, str]:
    """The page at `path` as the admin, ana and bob see it."""
    seen = {}
    for name, token in [("admin", ADMIN), ("ana", world.ana["token"]), ("bob", world.bob["token"])]:
        csrf = sign_in(client, token)
        seen[name] = client.get(path).get_data(as_text=True)
        client.post("/signout", data={"csrf_token": csrf})
    return seen


def alert_rows(page: str) -> dict[str, str]:
    """Each alert event shown on a cluster page, by type: its delivery status or `none`."""
    rows = re.findall(r'<tr data-event="([^"]+)">.*?data-delivery="([^"]+)"', page, re.S)
    return dict(rows)


def test_recent_alerts_show_every_event_to_the_admin_and_a_users_own_to_them(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    """The events themselves, whether or not a webhook is set: a dead node shows with no
    cluster webhook; beside an event, the delivery to the looker's webhook when there is one."""
    hub = hub_app.extensions["blackwidow"]
    with hub.sessions.begin() as session:  # no BLACKWIDOW_WEBHOOK_URL here
        hub.alerts.emit(session, [events.node_dead(2, "http://10.0.0.2:8000")])
        hub.alerts.emit(
            session, [events.crawler_failed(world.ana_crawler["id"], world.ana["id"], "x")]
        )
    with hub.sessions.begin() as session:  # as a hub with a cluster webhook would
        AlertOutbox(cluster_hook=True).emit(session, [events.node_back(2, "http://10.0.0.2:8000")])
    seen = {name: alert_rows(page) for name, page in pages_of_everyone(client, world, "/").items()}
    assert seen["admin"] == {"node.dead": "none", "crawler.failed": "none", "node.back": "pending"}
    assert seen["ana"] == {"crawler.failed": "pending"}  # to her own webhook; no node events
    assert seen["bob"] == {}


def test_a_new_crawler_form_is_checked_by_the_create_schema_and_names_the_field(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    """A refusal shows the form again, with what was typed and the field marked, and writes
    nothing; a good form makes the crawler the API would."""
    csrf = sign_in(client, world.bob["token"])
    assert 'id="new-crawler-link"' in client.get("/crawlers").get_data(as_text=True)
    before = snapshot(hub_app, world)
    good = {"name": "bob-news", "feeds": "https://news.example/feed", "csrf_token": csrf}
    for bad, said, marked in [
        ({"feeds": "not-a-feed"}, "line 1 (not-a-feed): Not a valid URL.", "feeds"),
        ({"feeds": " \n "}, "query.feeds: Length must be between 1 and 100.", "feeds"),
        ({"item_limit": "ten"}, "item_limit: Not a valid integer.", "item_limit"),
        ({"name": ""}, "name: must not be empty or only white space", "name"),
        ({"name": "bell\x07"}, "name: must not contain control characters: U+0007 at 4", "name"),
    ]:
        refused = client.post("/crawlers/new", data=good | bad)
        page = refused.get_data(as_text=True)
        assert refused.status_code == 422 and said in page, page
        assert re.search(rf'name="{marked}"[^>]*aria-invalid="true"', page), page
        assert (good | bad)["name"] in page  # what was typed stays
        assert snapshot(hub_app, world) == before
    form = good | {"feeds": "https://news.example/feed\nhttps://news.example/more"}
    form |= {"keywords": "python, machine learning\nredis", "item_limit": "40"}
    made = client.post("/crawlers/new", data=form)
    assert made.status_code == 303
    crawler_id = int(made.headers["Location"].rsplit("/", 1)[1])
    api = client.get(f"/api/v1/crawlers/{crawler_id}", headers=bearer(world.bob["token"])).json
    assert api["name"] == "bob-news" and api["item_limit"] == 40 and api["source"] == "rss"
    assert api["query"]["feeds"] == ["https://news.example/feed", "https://news.example/more"]
    assert api["query"]["keywords"] == ["python", "machine learning", "redis"]
    again = client.post("/crawlers/new", data=good)  # a name bob's crawlers hold: the API's 409
    said = html.unescape(again.get_data(as_text=True))
    assert again.status_code == 409 and "is named 'bob-news' already" in said
    assert snapshot(hub_app, world) != before


def test_a_refused_form_shows_every_error_at_once_and_bad_feeds_by_line(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    """Name, feeds (each bad line by its number) and limit at once, each under its field;
    a name already held is said beside the others; nothing is written."""
    csrf = sign_in(client, world.bob["token"])
    held = client.get("/api/v1/crawlers", headers=bearer(world.bob["token"])).json[0]["name"]
    before = snapshot(hub_app, world)
    feeds = "https://news.example/feed\nftp://news.example/x\nhttps://ok.example/\nnot-a-feed"
    form = {"name": held, "feeds": feeds, "item_limit": "ten", "csrf_token": csrf}
    refused = client.post("/crawlers/new", data=form)
    page = html.unescape(refused.get_data(as_text=True))
    assert refused.status_code == 422, page
    for said in [
        f"is named {held!r} already",
        "line 2 (ftp://news.example/x): Not a valid URL.",
        "line 4 (not-a-feed): Not a valid URL.",
        "item_limit: Not a valid integer.",
        "4 errors: nothing was written",
    ]:
        assert said in page, (said, page)
    for marked in ("name", "feeds", "item_limit"):
        assert re.search(rf'name="{marked}"[^>]*aria-invalid="true"', page), page
    assert snapshot(hub_app, world) == before


def test_the_admin_is_not_offered_a_crawler_form_the_api_would_refuse(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    csrf = sign_in(client, ADMIN)
    assert "new-crawler-link" not in client.get("/crawlers").get_data(as_text=True)
    before = snapshot(hub_app, world)
    assert client.get("/crawlers/new").status_code == 403
    form = {"name": "admins", "feeds": "https://news.example/feed", "csrf_token": csrf}
    refused = client.post("/crawlers/new", data=form)
    assert refused.status_code == 403
    assert "crawlers belong to users" in refused.get_data(as_text=True)
    assert snapshot(hub_app, world) == before


def test_deleting_asks_first_and_then_deletes_as_the_api_does(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    csrf = sign_in(client, world.ana["token"])
    crawler_id = world.ana_crawler["id"]
    page = client.get(f"/crawlers/{crawler_id}").get_data(as_text=True)
    assert f'href="/crawlers/{crawler_id}/delete"' in page
    before = snapshot(hub_app, world)
    asked = client.get(f"/crawlers/{crawler_id}/delete")
    assert asked.status_code == 200 and 'id="delete-crawler"' in asked.get_data(as_text=True)
    assert snapshot(hub_app, world) == before  # asking changes nothing
    done = client.post(f"/crawlers/{crawler_id}/delete", data={"csrf_token": csrf})
    assert done.status_code == 303 and done.headers["Location"] == "/crawlers"
    assert f"Crawler {crawler_id} ({PRIVATE}-crawler) deleted." in client.get("/crawlers").text
    gone = client.get(f"/api/v1/crawlers/{crawler_id}", headers=bearer(world.ana["token"]))
    assert gone.status_code == 404


def test_exports_on_the_session_are_the_apis_files(client: FlaskClient, world: World) -> None:
    sign_in(client, world.ana["token"])
    crawler_id = world.ana_crawler["id"]
    page = client.get(f"/crawlers/{crawler_id}").get_data(as_text=True)
    for name in ("jsonl", "csv"):
        path = f"/crawlers/{crawler_id}/items.{name}"
        assert f'href="{path}"' in page
        mine = client.get(path)
        api = client.get(f"/api/v1{path}", headers=bearer(ADMIN))
        assert mine.status_code == api.status_code == 200
        assert mine.data == api.data and f"{PRIVATE}-item" in mine.get_data(as_text=True)
        assert mine.headers["Content-Type"] == api.headers["Content-Type"]
        assert mine.headers["Content-Disposition"] == api.headers["Content-Disposition"]


def test_the_icon_answers_anyone(client: FlaskClient) -> None:
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.data[:4] == b"\x00\x00\x01\x00"  # an ICO file
    assert icon.headers["Content-Type"] in ("image/vnd.microsoft.icon", "image/x-icon")
    assert 'rel="icon"' in client.get("/signin").get_data(as_text=True)


# the states' age as the page says it, 71 s when set and a few more on a busy machine
AGED = r"as of 7[1-9] s ago"


def test_the_cluster_page_says_why_it_is_degraded_how_old_states_are_and_what_was_stored(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    """No leader: `degraded` beside its reason; a last cycle long ago: node and crawler states
    greyed with their age; the crawlers' rate samples: items stored per minute over the rate
    window, their counts with separators."""
    now = utcnow()
    at = now.timestamp()
    with hub_app.extensions["blackwidow"].sessions.begin() as session:
        last = now - timedelta(seconds=71)  # and no holder: the lock lapsed
        session.merge(MonitorLock(name="monitor", holder=None, expires_at=None, last_cycle_at=last))
        node = session.get(Node, world.node_id)
        node.state = "active"
        crawler = session.get(Crawler, world.ana_crawler["id"])
        crawler.state, crawler.items_collected = "running", 1_500_000
        crawler.rate_samples = [[0, at - 200, at - 200], [1_500_000, at - 30, at - 90]]
    sign_in(client, ADMIN)
    page = html.unescape(client.get("/").get_data(as_text=True))
    assert re.search(r'id="health-status">degraded<', page), page
    assert "monitor: no leader for shard 0/1" in page
    assert re.search(rf'class="state active stale"[^>]*>active</span><small[^>]*>· {AGED}', page)
    assert re.search(r"last 5 min: 1,500,000 items", page), page
    assert page.count('class="bar') == 5
    listed = html.unescape(client.get("/crawlers").get_data(as_text=True))
    assert "1,500,000" in listed and re.search(f"· {AGED}", listed)

    with hub_app.extensions["blackwidow"].sessions.begin() as session:
        session.merge(MonitorLock(name="monitor", last_cycle_at=utcnow()))
    fresh = client.get("/crawlers").get_data(as_text=True)
    assert "data-stale" not in fresh
