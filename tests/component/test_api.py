"""The hub's REST API through Flask's test client on a real app and database."""

from __future__ import annotations

import itertools

import pytest

from tests.component.conftest import ADMIN, SECRET, bearer

NAMES = itertools.count(1)  # crawler names, unique per user as the hub wants

FEED = "https://example.com/feed.xml"


def rss(feeds=(FEED,), **extra):
    body = {"name": f"news {next(NAMES)}", "source": "rss", "query": {"feeds": list(feeds)}}
    return {**body, **extra}


def test_admin_creates_user_and_token_is_shown_once(client, make_user):
    user = make_user("ana", item_limit=100)
    assert user["name"] == "ana" and user["item_limit"] == 100 and len(user["token"]) > 20
    again = client.post("/api/v1/users", json={"name": "ana"}, headers=bearer(ADMIN))
    assert again.status_code == 409 and again.json["error"]["field"] == "name"


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), (bearer("wrong"), 401), (bearer(SECRET), 401)],
)
def test_user_creation_needs_the_admin_token(client, headers, status):
    response = client.post("/api/v1/users", json={"name": "x"}, headers=headers)
    assert response.status_code == status
    assert response.json["error"]["field"] == "Authorization"


def test_user_token_is_not_admin(client, make_user):
    token = make_user()["token"]
    response = client.post("/api/v1/users", json={"name": "y"}, headers=bearer(token))
    assert response.status_code == 403


def test_create_crawler_and_read_it_back(client, make_user):
    token = make_user()["token"]
    body = rss(item_limit=5, retention_days=30)
    created = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
    assert created.status_code == 201
    crawler = created.json
    assert crawler["state"] == "pending" and crawler["item_limit"] == 5
    assert crawler["retention_days"] == 30
    assert crawler["node_id"] is None and crawler["items_collected"] == 0
    assert crawler["query"] == {"feeds": [FEED], "keywords": []}
    fetched = client.get(f"/api/v1/crawlers/{crawler['id']}", headers=bearer(token))
    assert fetched.json == crawler
    assert client.get("/api/v1/crawlers", headers=bearer(token)).json == [crawler]


def test_equal_feed_sets_share_a_source_key_whatever_the_keywords(client, make_user):
    token = make_user()["token"]
    first = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token)).json
    spelled = rss(feeds=["HTTPS://EXAMPLE.com:443/feed.xml#top"])
    spelled["query"]["keywords"] = ["python"]
    second = client.post("/api/v1/crawlers", json=spelled, headers=bearer(token)).json
    other = client.post(
        "/api/v1/crawlers", json=rss(feeds=["https://b.example/x"]), headers=bearer(token)
    ).json
    assert first["uuid"] == second["uuid"] != other["uuid"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "n", "source": "gopher", "query": {"feeds": [FEED]}}, "source"),
        ({"name": "n", "source": "rss", "query": {}}, "query.feeds"),
        ({"name": "n", "source": "rss", "query": {"feeds": []}}, "query.feeds"),
        (
            {"name": "n", "source": "rss", "query": {"feeds": ["file:///etc/passwd"]}},
            "query.feeds.0",
        ),
        ({"name": "n", "source": "rss", "query": {"feeds": [FEED, "ftp://x/y"]}}, "query.feeds.1"),
        ({"name": "n", "source": "rss", "query": {"feeds": FEED}}, "query.feeds"),
        (
            {"name": "n", "source": "rss", "query": {"feeds": [FEED]}, "retention_days": 0},
            "retention_days",
        ),
        (
            {"name": "n", "source": "rss", "query": {"feeds": [FEED]}, "retention_days": 7301},
            "retention_days",
        ),
        (
            {"name": "n", "source": "rss", "query": {"feeds": [FEED], "keywords": "x"}},
            "query.keywords",
        ),
        ({"name": "n", "source": "rss", "query": {"feeds": [FEED], "extra": 1}}, "query.extra"),
        ({"name": "n", "source": "rss", "query": [FEED]}, "query"),
        ({"source": "rss", "query": {"feeds": [FEED]}}, "name"),
        ({"name": "", "source": "rss", "query": {"feeds": [FEED]}}, "name"),
        ({"name": "a\x00b", "source": "rss", "query": {"feeds": [FEED]}}, "name"),
        ({"name": "bell\x07", "source": "rss", "query": {"feeds": [FEED]}}, "name"),
        ({"name": "  \t ", "source": "rss", "query": {"feeds": [FEED]}}, "name"),
        ({**rss(), "item_limit": -1}, "item_limit"),
        ({**rss(), "item_limit": "5"}, "item_limit"),
        ({**rss(), "item_limit": 2**31}, "item_limit"),
        ({**rss(), "enabled": "maybe"}, "enabled"),
        ({**rss(), "owner": 3}, "owner"),
        ({**rss(), "recollect_after": 3599}, "recollect_after"),
        ({**rss(), "recollect_after": "604800"}, "recollect_after"),
        (
            {"name": "n", "source": "rss", "query": {"feeds": [FEED], "url_keys": {"drop": "x"}}},
            "query.url_keys.drop",
        ),
        (
            {"name": "n", "source": "rss", "query": {"feeds": [FEED], "url_keys": {"also": []}}},
            "query.url_keys.also",
        ),
    ],
)
def test_bad_crawler_input_names_the_field_and_writes_nothing(client, make_user, body, field):
    token = make_user()["token"]
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
    assert response.status_code == 422, response.json
    assert response.json["error"]["field"] == field
    assert response.json["error"]["code"] == "invalid"
    assert client.get("/api/v1/crawlers", headers=bearer(token)).json == []


def test_a_body_that_is_not_json_is_refused(client, make_user):
    token = make_user()["token"]
    response = client.post(
        "/api/v1/crawlers",
        data="{not json",
        headers={**bearer(token), "Content-Type": "application/json"},
    )
    assert 400 <= response.status_code < 500
    assert "error" in response.json


def test_a_huge_body_is_refused(client, make_user):
    token = make_user()["token"]
    body = rss(feeds=[FEED])
    body["name"] = "x" * (2 * 1024 * 1024)
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
    assert response.status_code == 413 and response.json["error"]["code"]


def test_users_see_only_their_own_crawlers(client, make_user):
    ana, bob = make_user("ana")["token"], make_user("bob")["token"]
    crawler = client.post("/api/v1/crawlers", json=rss(), headers=bearer(ana)).json
    url = f"/api/v1/crawlers/{crawler['id']}"
    assert client.get(url, headers=bearer(bob)).status_code == 404
    assert client.get(f"{url}/items", headers=bearer(bob)).status_code == 404
    assert client.patch(url, json={"enabled": False}, headers=bearer(bob)).status_code == 404
    assert client.delete(url, headers=bearer(bob)).status_code == 404
    assert client.get("/api/v1/crawlers", headers=bearer(bob)).json == []
    assert client.get(url, headers=bearer(ana)).json["enabled"] is True
    assert [c["id"] for c in client.get("/api/v1/crawlers", headers=bearer(ADMIN)).json] == [
        crawler["id"]
    ]


def test_unknown_ids_and_missing_tokens(client, make_user):
    token = make_user()["token"]
    for crawler_id in (999, 2**31, 2**64):  # past any SQL integer, too
        missing = client.get(f"/api/v1/crawlers/{crawler_id}", headers=bearer(token))
        assert missing.status_code == 404 and missing.json["error"]["field"] == "id"
    assert client.get("/api/v1/crawlers").status_code == 401
    assert client.get("/api/v1/nope", headers=bearer(token)).status_code == 404


def test_patch_disables_and_validates_a_new_query(client, make_user):
    token = make_user()["token"]
    crawler = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token)).json
    url = f"/api/v1/crawlers/{crawler['id']}"
    disabled = client.patch(url, json={"enabled": False}, headers=bearer(token)).json
    assert disabled["enabled"] is False and disabled["state"] == "disabled"
    bad = client.patch(url, json={"query": {"feeds": ["nope"]}}, headers=bearer(token))
    assert bad.status_code == 422 and bad.json["error"]["field"] == "query.feeds.0"
    assert client.get(url, headers=bearer(token)).json["query"]["feeds"] == [FEED]
    assert client.delete(url, headers=bearer(token)).status_code == 204
    assert client.get(url, headers=bearer(token)).status_code == 404


def test_items_of_a_new_crawler_are_empty_and_limit_is_checked(client, make_user):
    token = make_user()["token"]
    crawler = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token)).json
    url = f"/api/v1/crawlers/{crawler['id']}/items"
    assert client.get(url, headers=bearer(token)).json == {"items": [], "next": None}
    bad = client.get(f"{url}?limit=0", headers=bearer(token))
    assert bad.status_code == 422 and bad.json["error"]["field"] == "limit"


def test_node_registration_needs_the_cluster_secret_and_keeps_ids(client, serve_node):
    body = {"url": serve_node(), "capacity": 10}
    assert client.post("/api/v1/nodes", json=body).status_code == 401
    assert client.post("/api/v1/nodes", json=body, headers=bearer(ADMIN)).status_code == 401
    first = client.post("/api/v1/nodes", json=body, headers=bearer(SECRET))
    again = client.post("/api/v1/nodes", json=body, headers=bearer(SECRET))
    assert first.status_code == again.status_code == 201
    assert first.json["id"] == again.json["id"]
    for bad_body, field in [
        ({"url": "gopher://x"}, "url"),
        ({"url": f"http://127.0.0.1:9999/{'x' * 500}"}, "url"),
        ({**body, "capacity": 2**31}, "capacity"),
    ]:
        bad = client.post("/api/v1/nodes", json=bad_body, headers=bearer(SECRET))
        assert bad.status_code == 422 and bad.json["error"]["field"] == field


def test_node_listing_is_admin_only_and_count_is_public(client, make_user, serve_node):
    client.post("/api/v1/nodes", json={"url": serve_node()}, headers=bearer(SECRET))
    assert client.get("/api/v1/nodes", headers=bearer(make_user()["token"])).status_code == 403
    nodes = client.get("/api/v1/nodes", headers=bearer(ADMIN)).json
    assert [n["state"] for n in nodes] == ["active"]
    # BLACKWIDOW_MIN_NODES (2) is the floor however few data sources there are
    assert client.get("/api/v1/nodes/count").json == {"active": 1, "desired": 2}


def test_health_endpoints(client):
    assert client.get("/healthz").json["status"] == "ok"
    detail = client.get("/api/v1/health").json
    assert detail["store"] == {"ok": True}
    assert detail["monitor"]["leader"] is False  # no monitor runs in this test
    assert detail["status"] == "degraded"


def test_openapi_description_is_served_from_the_schemas(client):
    spec = client.get("/api/v1/openapi.json").json
    assert spec["openapi"].startswith("3.")
    assert {"/api/v1/crawlers", "/api/v1/crawlers/{crawler_id}", "/api/v1/users"} <= set(
        spec["paths"]
    )
    create = spec["paths"]["/api/v1/crawlers"]["post"]
    assert "requestBody" in create


# Found while fuzzing the API (tests/component/test_fuzz.py): each was a 500 before.


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (b'{"name": "n", "query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400, None),
        (b'{"name": "n", "item_limit": ' + b"9" * 5000 + b"}", 400, None),
        (
            b'{"name": "a\\ud800b", "source": "rss", "query": {"feeds": ["%s"]}}' % FEED.encode(),
            422,
            "name",
        ),
        (
            b'{"name": "n", "source": "rss", "query": {"feeds": ["%s"], "keywords": ["\\udfff"]}}'
            % FEED.encode(),
            422,
            "query.keywords.0",
        ),
        (
            b'{"name": "n", "source": "rss", "query": {"feeds": ["https://example.com/\\ud800"]}}',
            422,
            "query.feeds.0",
        ),
    ],
    ids=[
        "nested past the recursion limit",
        "5000 digits",
        "surrogate name",
        "surrogate keyword",
        "surrogate feed",
    ],
)
def test_json_python_or_sql_cannot_take_is_refused_naming_the_field(
    client, make_user, body: bytes, status: int, field: str | None
) -> None:
    """Python's JSON decoder raises RecursionError or ValueError past its limits (webargs knew
    only JSONDecodeError), and SQLite and PostgreSQL refuse to store a lone surrogate."""
    token = make_user()["token"]
    headers = {**bearer(token), "Content-Type": "application/json"}
    response = client.post("/api/v1/crawlers", data=body, headers=headers)
    assert response.status_code == status, response.json
    assert response.json["error"]["code"] == "invalid"
    assert response.json["error"]["field"] == field
    assert client.get("/api/v1/crawlers", headers=bearer(token)).json == []


def test_a_user_name_with_a_lone_surrogate_is_refused(client) -> None:
    response = client.post(
        "/api/v1/users",
        data=b'{"name": "\\ud800"}',
        headers={**bearer(ADMIN), "Content-Type": "application/json"},
    )
    assert response.status_code == 422 and response.json["error"]["field"] == "name"


@pytest.mark.parametrize(
    ("feed", "message"),
    [
        ("https://example.com:99999/feed.xml", "port out of range"),
        ("https://reader:hunter2@example.com/feed.xml", "credentials"),
    ],
)
def test_feed_urls_no_fetch_should_take_are_refused_on_create_and_change(
    client, make_user, feed: str, message: str
) -> None:
    """The URL rule lets any digits through as a port, and credentials would show in logs."""
    token = make_user()["token"]
    bad = {"feeds": ["https://example.com/ok.xml", feed]}
    created = client.post("/api/v1/crawlers", json={**rss(), "query": bad}, headers=bearer(token))
    assert created.status_code == 422 and created.json["error"]["field"] == "query.feeds.1"
    assert message in created.json["error"]["message"]
    crawler = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token)).json
    url = f"/api/v1/crawlers/{crawler['id']}"
    changed = client.patch(url, json={"query": bad}, headers=bearer(token))
    assert changed.status_code == 422 and changed.json["error"]["field"] == "query.feeds.1"
    assert client.get(url, headers=bearer(token)).json == crawler


def test_node_registration_is_authenticated_before_its_body_is_read(client) -> None:
    response = client.post("/api/v1/nodes", json={"url": "gopher://x", "capacity": -1})
    assert response.status_code == 401 and response.json["error"]["field"] == "Authorization"


def test_a_users_crawler_names_are_unique_and_a_duplicate_is_a_409_naming_name(client, make_user):
    """Create, rename and batch alike; another user's crawler of that name is no clash, nor
    a crawler's own name in a PATCH."""
    ana, bob = make_user("ana")["token"], make_user("bob")["token"]
    first = client.post("/api/v1/crawlers", json=rss(name="news"), headers=bearer(ana)).json
    other = client.post("/api/v1/crawlers", json=rss(name="tech"), headers=bearer(ana)).json
    again = client.post("/api/v1/crawlers", json=rss(name="news"), headers=bearer(ana))
    assert again.status_code == 409, again.json
    assert again.json["error"]["code"] == "conflict" and again.json["error"]["field"] == "name"
    assert f"crawler {first['id']} is named 'news' already" in again.json["error"]["message"]
    assert (
        client.post("/api/v1/crawlers", json=rss(name="news"), headers=bearer(bob)).status_code
        == 201
    )

    path = f"/api/v1/crawlers/{other['id']}"
    renamed = client.patch(path, json={"name": "news"}, headers=bearer(ana))
    assert renamed.status_code == 409 and renamed.json["error"]["field"] == "name"
    assert client.patch(path, json={"name": "tech"}, headers=bearer(ana)).status_code == 200

    batch = [rss(name="fresh"), rss(name="fresh")]
    twice = client.post("/api/v1/crawlers/batch", json={"crawlers": batch}, headers=bearer(ana))
    assert twice.status_code == 409 and twice.json["error"]["field"] == "crawlers.1.name"
    held = [rss(name="fresh"), rss(name="tech")]
    clash = client.post("/api/v1/crawlers/batch", json={"crawlers": held}, headers=bearer(ana))
    assert clash.status_code == 409 and clash.json["error"]["field"] == "crawlers.1.name"
    names = [c["name"] for c in client.get("/api/v1/crawlers", headers=bearer(ana)).json]
    assert names == ["news", "tech"]  # nothing of the refused batches was written


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("bell\x07ring", "must not contain control characters: U+0007 at 4"),
        ("esc\x1b[31m", "must not contain control characters: U+001B at 3"),
        ("two\nlines", "must not contain control characters: U+000A at 3"),
        ("tab\there", "must not contain control characters: U+0009 at 3"),
        ("c1\x85c1", "must not contain control characters: U+0085 at 2"),
        ("xml\ufffe", "must not contain control characters: U+FFFE at 3"),
        (" \u00a0 ", "must not be empty or only white space"),
        ("x" * 201, "longer than 200 characters"),
    ],
)
def test_a_crawler_name_is_one_trimmed_line_of_text_on_every_way_in(
    client, make_user, name: str, why: str
) -> None:
    """Create, rename, batch and a crawler outline's import refuse what the name rule refuses,
    naming the field, and trim surrounding space alike (as an import always did), so a name
    survives its own export."""
    token = make_user()["token"]
    padded = rss(name="  padded name\u00a0")
    made = client.post("/api/v1/crawlers", json=padded, headers=bearer(token))
    assert made.status_code == 201 and made.json["name"] == "padded name"
    path = f"/api/v1/crawlers/{made.json['id']}"
    renamed = client.patch(path, json={"name": " renamed "}, headers=bearer(token))
    assert renamed.status_code == 200 and renamed.json["name"] == "renamed"

    refused = client.post("/api/v1/crawlers", json=rss(name=name), headers=bearer(token))
    assert refused.status_code == 422
    assert refused.json["error"] == {"code": "invalid", "field": "name", "message": f"name: {why}"}
    patched = client.patch(path, json={"name": name}, headers=bearer(token))
    assert (patched.status_code, patched.json["error"]["field"]) == (422, "name")
    batch = {"crawlers": [rss(name="fine"), rss(name=name)]}
    batched = client.post("/api/v1/crawlers/batch", json=batch, headers=bearer(token))
    assert (batched.status_code, batched.json["error"]["field"]) == (422, "crawlers.1.name")
    names = [c["name"] for c in client.get("/api/v1/crawlers", headers=bearer(token)).json]
    assert names == ["renamed"]


def test_an_import_makes_fit_names_of_titles_that_hold_what_a_name_may_not(
    client, make_user
) -> None:
    """A reader's feed title with a C1 control character (legal XML, unfit in a name) makes a
    crawler named with a space there; a crawler outline, which is a name given, is refused."""
    token = make_user()["token"]
    titled = (
        '<opml version="2.0"><body>'
        '<outline text="Caf\u00e9\u0085News " xmlUrl="https://a.example/feed"/>'
        "</body></opml>"
    ).encode()
    headers = {**bearer(token), "Content-Type": "text/x-opml"}
    made = client.post("/api/v1/crawlers/import", data=titled, headers=headers)
    assert made.status_code == 201, made.json
    assert [c["name"] for c in made.json["crawlers"]] == ["Caf\u00e9 News"]
    outline = (
        '<opml version="2.0" xmlns:blackwidow="urn:blackwidow:opml:1"><body>'
        '<outline text="mi\u0085ne" blackwidow:itemLimit="5">'
        '<outline text="a" xmlUrl="https://c.example/f"/></outline></body></opml>'
    ).encode()
    refused = client.post("/api/v1/crawlers/import", data=outline, headers=headers)
    assert refused.status_code == 422, refused.json
    assert refused.json["error"]["field"] == "body.outline[0].text"
    assert "control characters: U+0085" in refused.json["error"]["message"]


OPML_FEEDS = b"""<?xml version="1.0"?><opml version="2.0"><body>
<outline text="news" xmlUrl="https://a.example/feed"/>
<outline text="news" xmlUrl="https://b.example/feed"/>
</body></opml>"""
OPML_CRAWLERS = b"""<?xml version="1.0"?>
<opml version="2.0" xmlns:blackwidow="urn:blackwidow:opml:1"><body>
<outline text="mine" blackwidow:itemLimit="5"><outline text="a" xmlUrl="https://c.example/f"/></outline>
<outline text="mine" blackwidow:itemLimit="6"><outline text="b" xmlUrl="https://d.example/f"/></outline>
</body></opml>"""


def test_an_import_names_its_crawlers_apart_and_two_crawler_outlines_of_one_name_conflict(
    client, make_user
):
    """Names an import makes up (feed titles) take `name (2)` past the user's own; a crawler
    outline's name is the crawler's, so a second of one name is a 409 naming its outline."""
    token = make_user()["token"]
    assert (
        client.post("/api/v1/crawlers", json=rss(name="news"), headers=bearer(token)).status_code
        == 201
    )
    headers = {**bearer(token), "Content-Type": "text/x-opml"}
    made = client.post("/api/v1/crawlers/import", data=OPML_FEEDS, headers=headers)
    assert made.status_code == 201, made.json
    assert [c["name"] for c in made.json["crawlers"]] == ["news (2)", "news (3)"]
    refused = client.post("/api/v1/crawlers/import", data=OPML_CRAWLERS, headers=headers)
    assert refused.status_code == 409, refused.json
    assert refused.json["error"]["field"] == "body.outline[1].text"
    assert "'mine'" in refused.json["error"]["message"]
