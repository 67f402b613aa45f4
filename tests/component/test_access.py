"""Tenant isolation on every hub route: who may call what, and that a refused call changes nothing.

The access table below is checked against the app's own `url_map`, so a new route fails the
suite until someone decides who may call it; every rule then gets the tests of its kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import MetaData, Table, select
from sqlalchemy.orm import Session

from blackwidow.app import create_app
from blackwidow.core.tokens import hash_token
from blackwidow.models import Node
from sources.model import Item
from tests.component.conftest import ADMIN, SECRET, bearer, hub_settings

THREAD = "https://blog.example/posts/1"
PRIVATE = "ana-private"  # in every name, URL and item of user A: B must never see it


class Access(Enum):
    ANYONE = "no token needed"
    CALLER = "any user or the admin; answers with the caller's own crawlers only"
    OWNER = "names a crawler: only its owner (and the admin)"
    SELF = "names a user: only that user (and the admin)"
    ME = "the caller's own record: any user; the admin token is no user's"
    ADMIN = "the admin token only"
    CLUSTER = "the cluster secret only"


class Via(Enum):
    TOKEN = "a bearer token in Authorization (the REST API)"
    SESSION = (
        "the dashboard's session cookie, signed in with a token (tests/component/test_dashboard.py)"
    )


@dataclass(frozen=True)
class Rule:
    access: Access
    body: dict[str, Any] | bytes | None = (
        None  # valid input (a GET's query), so a refusal is about the caller
    )
    via: Via = Via.TOKEN


def rss(name: str, feed: str = "https://blog.example/feed") -> dict[str, Any]:
    return {"name": name, "source": "rss", "query": {"feeds": [feed]}}


CREDENTIAL = "/api/v1/users/<int:user_id>/credentials/<source>/<name>"
WEBHOOKS = "/api/v1/users/<int:user_id>/webhooks"
# a literal global address: no DNS needed, and the fetch rules let it through
WEBHOOK = {"url": f"http://93.184.215.14/{PRIVATE}", "secret": "mallory-secret"}


ACCESS: dict[tuple[str, str], Rule] = {
    ("GET", "/static/<path:filename>"): Rule(Access.ANYONE),  # Flask's own; no static folder
    ("GET", "/healthz"): Rule(Access.ANYONE),
    ("GET", "/readyz"): Rule(Access.ANYONE),
    ("GET", "/api/v1/health"): Rule(Access.ANYONE),
    ("GET", "/api/v1/openapi.json"): Rule(Access.ANYONE),
    ("GET", "/api/v1/nodes/count"): Rule(Access.ANYONE),
    # open unless BLACKWIDOW_METRICS_TOKEN or _NETWORKS restrict it (test_hub_metrics.py)
    ("GET", "/metrics"): Rule(Access.ANYONE),
    ("POST", "/api/v1/users"): Rule(Access.ADMIN, {"name": "mallory", "item_limit": 5}),
    ("GET", "/api/v1/nodes"): Rule(Access.ADMIN),
    ("POST", "/api/v1/nodes"): Rule(Access.CLUSTER, {"url": "http://127.0.0.1:9", "capacity": 1}),
    ("POST", "/api/v1/nodes/<int:node_id>/leave"): Rule(Access.CLUSTER, {"generation": 1}),
    ("DELETE", "/api/v1/nodes/<int:node_id>"): Rule(Access.ADMIN),
    ("GET", "/api/v1/crawlers"): Rule(Access.CALLER),
    ("POST", "/api/v1/crawlers"): Rule(Access.CALLER, rss("bob-second")),
    ("POST", "/api/v1/crawlers/batch"): Rule(Access.CALLER, {"crawlers": [rss("bob-batch")]}),
    ("GET", "/api/v1/conversations/<path:conversation_id>"): Rule(Access.CALLER),
    ("GET", "/api/v1/items"): Rule(Access.CALLER, {"q": "item"}),
    ("POST", "/api/v1/crawlers/import"): Rule(
        Access.CALLER,
        b"<opml><body><outline text='bob-import' xmlUrl='https://blog.example/bob'/></body></opml>",
    ),
    ("GET", "/api/v1/crawlers.opml"): Rule(Access.CALLER),
    ("GET", "/api/v1/crawlers/<int:crawler_id>"): Rule(Access.OWNER),
    ("PATCH", "/api/v1/crawlers/<int:crawler_id>"): Rule(
        Access.OWNER,
        {
            "name": "hijacked",
            "enabled": False,
            "item_limit": 1,
            "query": {"feeds": ["https://mallory.example/feed"]},
        },
    ),
    ("DELETE", "/api/v1/crawlers/<int:crawler_id>"): Rule(Access.OWNER),
    ("GET", "/api/v1/crawlers/<int:crawler_id>/items"): Rule(Access.OWNER),
    ("GET", "/api/v1/crawlers/<int:crawler_id>/items.jsonl"): Rule(Access.OWNER),
    ("GET", "/api/v1/crawlers/<int:crawler_id>/items.csv"): Rule(Access.OWNER),
    ("GET", "/api/v1/crawlers/<int:crawler_id>/feeds"): Rule(Access.OWNER),
    ("GET", "/api/v1/users"): Rule(Access.ADMIN),
    ("GET", "/api/v1/users/me"): Rule(Access.ME),
    ("GET", "/api/v1/users/<int:user_id>"): Rule(Access.SELF),
    ("PATCH", "/api/v1/users/<int:user_id>"): Rule(Access.ADMIN, {"item_limit": 7}),
    ("GET", "/api/v1/users/<int:user_id>/usage"): Rule(Access.SELF),
    ("GET", "/api/v1/users/<int:user_id>/credentials"): Rule(Access.SELF),
    ("PUT", CREDENTIAL): Rule(Access.SELF, {"bearer_token": "mallory-token"}),
    ("DELETE", CREDENTIAL): Rule(Access.SELF),
    ("GET", WEBHOOKS): Rule(Access.SELF),
    ("POST", WEBHOOKS): Rule(Access.SELF, WEBHOOK),
    ("DELETE", f"{WEBHOOKS}/<int:webhook_id>"): Rule(Access.SELF),
    ("GET", f"{WEBHOOKS}/deliveries"): Rule(Access.SELF),
    ("GET", "/api/v1/webhooks/deliveries"): Rule(Access.ADMIN),
    # the dashboard: the same isolation, by the session its sign-in set
    ("GET", "/dashboard/static/<path:filename>"): Rule(Access.ANYONE, via=Via.SESSION),
    ("GET", "/signin"): Rule(Access.ANYONE, via=Via.SESSION),
    ("POST", "/signin"): Rule(Access.ANYONE, {"token": "not-a-token"}, via=Via.SESSION),
    ("POST", "/signout"): Rule(Access.CALLER, via=Via.SESSION),
    ("GET", "/"): Rule(Access.CALLER, via=Via.SESSION),
    ("GET", "/crawlers"): Rule(Access.CALLER, via=Via.SESSION),
    ("GET", "/users"): Rule(Access.CALLER, via=Via.SESSION),
    ("GET", "/search"): Rule(Access.CALLER, via=Via.SESSION),
    ("GET", "/crawlers/<int:crawler_id>"): Rule(Access.OWNER, via=Via.SESSION),
    ("POST", "/crawlers/<int:crawler_id>/edit"): Rule(
        Access.OWNER, {"enabled": "false", "item_limit": "1"}, via=Via.SESSION
    ),
    ("GET", "/favicon.ico"): Rule(Access.ANYONE, via=Via.SESSION),
    ("GET", "/crawlers/new"): Rule(Access.CALLER, via=Via.SESSION),
    ("POST", "/crawlers/new"): Rule(
        Access.CALLER, {"name": "bob-form", "feeds": "https://blog.example/bob"}, via=Via.SESSION
    ),
    ("GET", "/crawlers/<int:crawler_id>/delete"): Rule(Access.OWNER, via=Via.SESSION),
    ("POST", "/crawlers/<int:crawler_id>/delete"): Rule(Access.OWNER, via=Via.SESSION),
    ("GET", "/crawlers/<int:crawler_id>/items.jsonl"): Rule(Access.OWNER, via=Via.SESSION),
    ("GET", "/crawlers/<int:crawler_id>/items.csv"): Rule(Access.OWNER, via=Via.SESSION),
    ("POST", "/nodes/<int:node_id>/remove"): Rule(Access.ADMIN, via=Via.SESSION),
}

# The path variable that names whose record a scoped route reaches.
SCOPED_BY = {Access.OWNER: "crawler_id", Access.SELF: "user_id"}


# The only API routes that need no token (docs/api.md): a new public one is a decision to make.
PUBLIC_API = {
    ("GET", "/api/v1/health"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/api/v1/nodes/count"),
}


def routes_of(access: Access, via: Via = Via.TOKEN) -> list[tuple[str, str]]:
    return [route for route, rule in ACCESS.items() if rule.access is access and rule.via is via]


def token_routes_needing_a_caller() -> list[tuple[str, str]]:
    return [
        r
        for r, rule in ACCESS.items()
        if rule.via is Via.TOKEN and rule.access is not Access.ANYONE
    ]


def route_id(route: tuple[str, str]) -> str:
    return " ".join(route)


@dataclass
class World:
    """Two users, each with a crawler and an item in the same conversation; A has a stored
    credential and a webhook too."""

    ana: dict[str, Any]
    bob: dict[str, Any]
    ana_crawler: dict[str, Any]
    bob_crawler: dict[str, Any]
    ana_webhook: int
    node_id: int  # a node that left: the admin may remove it, and saying it left is idempotent
    node_url: str  # where a real node app answers the hub's call back at registration

    def path(self, rule: str, **given: Any) -> str:
        """The rule with its variables filled: by default, A's crawler, A and A's credential."""
        values = {
            "crawler_id": self.ana_crawler["id"],
            "user_id": self.ana["id"],
            "source": "twitter",
            "name": "default",
            "conversation_id": THREAD,
            "filename": "anything.txt",
            "webhook_id": self.ana_webhook,
            "node_id": self.node_id,
            **given,
        }

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            assert name in values, f"{rule}: give the access tests a value for <{name}>"
            return str(values[name])

        return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", fill, rule)


def item(crawler_id: int, title: str) -> Item:
    moment = datetime(2024, 5, 1, 12, tzinfo=UTC)
    return Item(
        id=f"{THREAD}#{title}",
        source="rss",
        url=f"{THREAD}#{title}",
        title=title,
        text=title,
        author=None,
        published_at=moment,
        fetched_at=moment,
        conversation_id=THREAD,
        in_reply_to=THREAD,
        crawler_id=crawler_id,
    )


@pytest.fixture
def world(
    hub_app: Flask,
    client: FlaskClient,
    make_user: Callable[..., dict[str, Any]],
    serve_node: Callable[[], str],
) -> World:
    ana, bob = make_user("ana"), make_user("bob")
    crawlers = []
    for owner, name, feed in [
        (ana, f"{PRIVATE}-crawler", f"https://{PRIVATE}.example/feed"),
        (bob, "bob-crawler", "https://bob.example/feed"),
    ]:
        created = client.post(
            "/api/v1/crawlers", json=rss(name, feed), headers=bearer(owner["token"])
        )
        assert created.status_code == 201, created.json
        crawlers.append(created.json)
    hub_app.extensions["blackwidow"].store.add(
        [item(crawlers[0]["id"], f"{PRIVATE}-item"), item(crawlers[1]["id"], "bob-item")]
    )
    stored = client.put(
        f"/api/v1/users/{ana['id']}/credentials/twitter/default",
        json={"bearer_token": f"{PRIVATE}-secret"},
        headers=bearer(ana["token"]),
    )
    assert stored.status_code == 201, stored.json
    hook = client.post(
        f"/api/v1/users/{ana['id']}/webhooks", json=WEBHOOK, headers=bearer(ana["token"])
    )
    assert hook.status_code == 201, hook.json
    node_url = serve_node()
    node = client.post("/api/v1/nodes", json={"url": node_url}, headers=bearer(SECRET))
    with hub_app.extensions["blackwidow"].sessions.begin() as session:
        session.get(Node, node.json["id"]).state = "left"
    return World(ana, bob, *crawlers, hook.json["id"], node.json["id"], node_url)


_REFLECTED: dict[str, list[Table]] = {}  # back end -> its tables, read once per process


def database_tables(session: Session) -> list[Table]:
    """The tables of the session's database, as the database says (not the models), so a new
    table or column is watched too. Read once per back end: every test's database is migrated
    to the same head, and reflecting cost more than the reads."""
    dialect = session.get_bind().dialect.name
    if dialect not in _REFLECTED:
        metadata = MetaData()
        metadata.reflect(bind=session.connection())
        _REFLECTED[dialect] = list(metadata.sorted_tables)
    return _REFLECTED[dialect]


def snapshot(app: Flask, world: World) -> dict[str, Any]:
    """Every row of every table the database holds, and every stored item: what a refused call
    must leave exactly as it was."""
    hub = app.extensions["blackwidow"]
    tables: dict[str, Any] = {}
    with hub.sessions() as session:
        for table in database_tables(session):
            tables[table.name] = sorted(
                (tuple(row) for row in session.execute(select(table))), key=repr
            )
    ids = [world.ana_crawler["id"], world.bob_crawler["id"]]
    tables["store items"] = [hub.store.items(crawler_id, 1000) for crawler_id in ids]
    return tables


def call(
    client: FlaskClient,
    route: tuple[str, str],
    path: str,
    headers: dict[str, str],
    body: dict[str, Any] | bytes | None = None,
) -> Any:
    """The route called with its rule's valid input, or `body`."""
    body = ACCESS[route].body if body is None else body
    if route[0] == "GET":  # a read's input is its query
        return client.open(path, method="GET", query_string=body, headers=headers)
    if isinstance(body, bytes):  # a document, not JSON: an OPML import
        return client.open(
            path, method=route[0], data=body, content_type="text/x-opml", headers=headers
        )
    return client.open(path, method=route[0], json=body, headers=headers)


def assert_unauthorized(response: Any, what: str) -> None:
    assert response.status_code == 401, f"{what}: {response.status_code} {response.json}"
    assert response.json["error"]["field"] == "Authorization", f"{what}: {response.json}"


# -- the table matches the app -------------------------------------------------------------


def test_the_access_table_covers_every_route_and_no_more(hub_app: Flask) -> None:
    """A route nobody classified is a route nobody checked: it fails here until it is."""
    served = {
        (method, rule.rule)
        for rule in hub_app.url_map.iter_rules()
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    unclassified = sorted(served - ACCESS.keys())
    assert not unclassified, f"routes missing from ACCESS in {__file__}: {unclassified}"
    stale = sorted(ACCESS.keys() - served)
    assert not stale, f"ACCESS names routes the hub no longer serves: {stale}"
    for rule in hub_app.url_map.iter_rules():
        for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}:
            route, access = (method, rule.rule), ACCESS[(method, rule.rule)].access
            if "crawler_id" in rule.arguments:  # a crawler in the path: owner-scoped, always
                assert access is Access.OWNER, route
            if "user_id" in rule.arguments:  # a user in the path: that user's, or the admin's
                assert access in (Access.SELF, Access.ADMIN), route
            if rule.rule.startswith("/api/v1/") and route not in PUBLIC_API:
                assert access is not Access.ANYONE, route
            if not rule.rule.startswith(("/api/", "/healthz", "/readyz", "/metrics", "/static/")):
                assert ACCESS[route].via is Via.SESSION, route  # the dashboard's pages


# -- no token, a wrong token ---------------------------------------------------------------

NOT_A_TOKEN = [
    {},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer "},
    bearer("not-a-token"),
    {"Authorization": f"Basic {ADMIN}"},
    {"Authorization": ADMIN},
]


@pytest.mark.parametrize("route", token_routes_needing_a_caller(), ids=route_id)
def test_calls_without_a_valid_token_are_refused_and_change_nothing(
    hub_app: Flask, client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    before = snapshot(hub_app, world)
    path = world.path(route[1])
    wrong = list(NOT_A_TOKEN)
    if ACCESS[route].access is Access.CLUSTER:
        wrong += [bearer(ADMIN), bearer(world.ana["token"]), bearer(hash_token(SECRET))]
    else:
        wrong += [bearer(SECRET), bearer(hash_token(world.ana["token"]))]
    for headers in wrong:
        assert_unauthorized(
            call(client, route, path, headers), f"{route} with {list(headers.values())}"
        )
    assert snapshot(hub_app, world) == before


BAD_INPUT: list[dict[str, Any]] = [
    {"data": "{not json", "content_type": "application/json"},
    {"data": '{"name": "\\ud800"}', "content_type": "application/json"},  # a lone surrogate
    {"json": {"no such field": [1, 2]}},
    {"json": []},
    {"query_string": {"limit": "not-a-number"}},
]


@pytest.mark.parametrize("route", token_routes_needing_a_caller(), ids=route_id)
def test_strangers_are_refused_before_their_input_is_read(
    client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    """A 400 or 422 before the 401 would tell a stranger the shape of the API."""
    path = world.path(route[1])
    for bad in BAD_INPUT:
        for headers in ({}, bearer("not-a-token")):
            response = client.open(path, method=route[0], headers=headers, **bad)
            assert_unauthorized(response, f"{route} with {bad} and {headers}")


def test_an_unset_admin_token_matches_nothing(database_url: str, tmp_path: Path) -> None:
    """Without BLACKWIDOW_ADMIN_TOKEN there is no admin: no empty or spelled-out token is one."""
    settings = hub_settings(database_url, tmp_path, admin_token=None)
    app = create_app(settings)
    try:
        client = app.test_client()
        for token in ("", "None", "null", SECRET):
            response = client.post("/api/v1/users", json={"name": "x"}, headers=bearer(token))
            assert_unauthorized(response, f"admin token {token!r}")
            assert client.get("/api/v1/nodes", headers=bearer(token)).status_code == 401
    finally:
        with app.extensions["blackwidow"].sessions() as session:
            session.get_bind().dispose()


# -- admin only ----------------------------------------------------------------------------


@pytest.mark.parametrize("route", routes_of(Access.ADMIN), ids=route_id)
def test_admin_routes_refuse_user_tokens(
    hub_app: Flask, client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    before = snapshot(hub_app, world)
    path = world.path(route[1])
    for user in (world.ana, world.bob):
        refused = call(client, route, path, bearer(user["token"]))
        assert refused.status_code == 403, refused.json
        assert refused.json["error"]["field"] == "Authorization"
    assert snapshot(hub_app, world) == before
    allowed = call(client, route, path, bearer(ADMIN))
    assert 200 <= allowed.status_code < 300, allowed.json  # the route works: 403 meant "not you"


@pytest.mark.parametrize("route", routes_of(Access.CLUSTER), ids=route_id)
def test_cluster_routes_take_the_cluster_secret(
    client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    body = ACCESS[route].body
    if route == ("POST", "/api/v1/nodes"):  # the hub calls the node back: one must be there
        body = {**body, "url": world.node_url}  # type: ignore[dict-item]
    allowed = call(client, route, world.path(route[1]), bearer(SECRET), body)
    assert 200 <= allowed.status_code < 300, allowed.json


# -- another user's crawler, another user ---------------------------------------------------


@pytest.mark.parametrize("route", routes_of(Access.OWNER) + routes_of(Access.SELF), ids=route_id)
def test_another_users_records_are_missing_and_untouched(
    hub_app: Flask, client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    """B's token on A's crawler, or on A's user id: the same 404 as for an id that never
    existed, nothing of A's in the answer, and nothing changed in SQL or the store."""
    before = snapshot(hub_app, world)
    variable = SCOPED_BY[ACCESS[route].access]
    ana_id, never = world.path(f"<{variable}>"), 999_999
    as_bob = bearer(world.bob["token"])
    refused = call(client, route, world.path(route[1]), as_bob)
    missing = call(client, route, world.path(route[1], **{variable: never}), as_bob)
    assert refused.status_code == 404, refused.json
    assert refused.json["error"]["field"] == "id"
    assert refused.json == _with_id(missing.json, str(never), ana_id)  # existence not leaked
    assert PRIVATE not in refused.get_data(as_text=True)
    assert snapshot(hub_app, world) == before
    reread = client.get(
        f"/api/v1/crawlers/{world.ana_crawler['id']}", headers=bearer(world.ana["token"])
    )
    assert reread.json == world.ana_crawler
    own = call(client, route, world.path(route[1]), bearer(world.ana["token"]))
    assert 200 <= own.status_code < 300, own.json  # the route works: 404 meant "not yours"


@pytest.mark.parametrize("route", routes_of(Access.SELF), ids=route_id)
def test_user_routes_take_the_admin_token(
    client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    allowed = call(client, route, world.path(route[1]), bearer(ADMIN))
    assert 200 <= allowed.status_code < 300, allowed.json


def _with_id(body: Any, old: str, new: str) -> Any:
    """An error body with one id swapped for another."""
    error = body["error"]
    return {"error": {**error, "message": error["message"].replace(old, new)}}


# -- the caller's own crawlers ---------------------------------------------------------------


def _foreign(body: Any, user_id: int, crawler_ids: set[int]) -> list[Any]:
    """Everything in a JSON answer that belongs to someone else: crawlers of another user,
    items of another user's crawlers."""
    found, pending = [], [body]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            other_user = "user_id" in value and value["user_id"] != user_id
            other_crawler = "crawler_id" in value and value["crawler_id"] not in crawler_ids
            if other_user or other_crawler:
                found.append(value)
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return found


@pytest.mark.parametrize("route", routes_of(Access.CALLER), ids=route_id)
def test_caller_routes_answer_with_the_callers_own_crawlers_only(
    hub_app: Flask, client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    path = world.path(route[1])
    ana_sees = client.get("/api/v1/crawlers", headers=bearer(world.ana["token"])).json
    answer = call(client, route, path, bearer(world.bob["token"]))
    assert 200 <= answer.status_code < 300, answer.json
    assert PRIVATE not in answer.get_data(as_text=True)
    bob_crawlers = {
        c["id"] for c in client.get("/api/v1/crawlers", headers=bearer(world.bob["token"])).json
    }
    assert world.bob_crawler["id"] in bob_crawlers
    assert _foreign(answer.json, world.bob["id"], bob_crawlers) == []
    assert client.get("/api/v1/crawlers", headers=bearer(world.ana["token"])).json == ana_sees
    if route[0] == "GET":  # the same read as A shows A's own: the check above could fail
        own = call(client, route, path, bearer(world.ana["token"]))
        assert PRIVATE in own.get_data(as_text=True)
        assert "bob-" not in own.get_data(as_text=True)


@pytest.mark.parametrize("route", routes_of(Access.ME), ids=route_id)
def test_me_routes_answer_each_caller_with_their_own_record(
    client: FlaskClient, world: World, route: tuple[str, str]
) -> None:
    for user in (world.ana, world.bob):
        answer = call(client, route, world.path(route[1]), bearer(user["token"]))
        assert answer.status_code == 200, answer.json
        assert (answer.json["id"], answer.json["name"]) == (user["id"], user["name"])
    refused = call(client, route, world.path(route[1]), bearer(ADMIN))
    assert (refused.status_code, refused.json["error"]["field"]) == (404, "Authorization")


def test_listings_show_everything_to_the_admin_only(client: FlaskClient, world: World) -> None:
    listed = client.get("/api/v1/crawlers", headers=bearer(ADMIN)).json
    assert {c["id"] for c in listed} == {world.ana_crawler["id"], world.bob_crawler["id"]}
    conversation = client.get(f"/api/v1/conversations/{THREAD}", headers=bearer(ADMIN)).json
    assert sorted(i["title"] for i in conversation["items"]) == [f"{PRIVATE}-item", "bob-item"]


# -- tokens at rest ----------------------------------------------------------------------------


def test_tokens_are_stored_only_as_their_hash(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    """A leaked database must not leak usable tokens: no column of any table holds a raw
    token, the users table holds each token's hash once, and a hash is no token."""
    hub = hub_app.extensions["blackwidow"]
    with hub.sessions() as session:
        cells = {
            (table.name, column.name, row_number): value
            for table in database_tables(session)
            for row_number, row in enumerate(session.execute(select(table)))
            for column, value in zip(table.columns, row, strict=True)
        }
    assert any(table == "users" for table, _, _ in cells)
    for user in (world.ana, world.bob):
        raw, hashed = user["token"], hash_token(user["token"])
        holding_raw = [place for place, value in cells.items() if raw in str(value)]
        assert holding_raw == [], f"a raw token is stored in {holding_raw}"
        holding_hash = [(t, c) for (t, c, _), value in cells.items() if value == hashed]
        assert holding_hash == [("users", "token_hash")]
        assert client.get("/api/v1/crawlers", headers=bearer(raw)).status_code == 200
        assert_unauthorized(
            client.get("/api/v1/crawlers", headers=bearer(hashed)), "a hash as token"
        )
