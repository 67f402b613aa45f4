"""Keyset pages of the crawler and node lists: whole and in id order when followed through
their Link headers, narrowed by filters, bounded by `limit`, and a cursor that holds only for
the caller and the filters it was given with."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from flask.testing import FlaskClient
from sqlalchemy import event

from blackwidow.models import Assignment
from tests.component.conftest import ADMIN, SECRET, bearer
from tests.component.test_dashboard import sign_in
from tests.support import every_page, next_page

CRAWLERS = "/api/v1/crawlers"


def body(n: int, source: str = "rss") -> dict[str, Any]:
    query = {"feeds": [f"https://e{n}.example/f"]} if source == "rss" else {"terms": [f"t{n}"]}
    return {"name": f"Crawler-{n}", "source": source, "query": query, "enabled": n % 3 != 0}


def create(client: FlaskClient, token: str, bodies: list[dict[str, Any]]) -> list[int]:
    made = client.post(f"{CRAWLERS}/batch", json={"crawlers": bodies}, headers=bearer(token))
    assert made.status_code == 201, made.json
    return [c["id"] for c in made.json["crawlers"]]


def getter(client: FlaskClient, token: str) -> Callable[[str], Any]:
    return lambda url: client.get(url, headers=bearer(token))


def cursor_of(response: Any) -> str:
    url = next_page(response.headers.get("Link"))
    assert url is not None, "no next page"
    return parse_qs(urlsplit(url).query)["cursor"][0]


def test_250_crawlers_come_back_whole_in_id_order_at_100_a_page(client, make_user) -> None:
    token = make_user()["token"]
    ids = create(client, token, [body(n) for n in range(250)])
    first = client.get(f"{CRAWLERS}?limit=100", headers=bearer(token))
    assert len(first.json) == 100 and first.headers["Link"].endswith('>; rel="next"')

    listed = every_page(getter(client, token), f"{CRAWLERS}?limit=100")

    assert [c["id"] for c in listed] == ids == sorted(ids)
    last = client.get(f"{CRAWLERS}?limit=50&cursor={cursor_of(first)}", headers=bearer(token))
    assert [c["id"] for c in last.json] == ids[100:150]
    assert len(client.get(CRAWLERS, headers=bearer(token)).json) == 100  # the default page


def test_a_page_exactly_full_has_no_next_link(client, make_user) -> None:
    token = make_user()["token"]
    create(client, token, [body(n) for n in range(4)])
    answer = client.get(f"{CRAWLERS}?limit=4", headers=bearer(token))
    assert len(answer.json) == 4 and "Link" not in answer.headers


def test_filters_combine_with_paging(client, make_user) -> None:
    token = make_user()["token"]
    bodies = [body(n, "rss" if n % 2 else "twitter") for n in range(60)]
    bodies[7]["name"] = "Weather 100% (north_east)"
    bodies[8]["name"] = "Weather 1000 north-east"  # what the wildcards would match, unescaped
    create(client, token, bodies)
    everything = every_page(getter(client, token), f"{CRAWLERS}?limit=1000")
    cases = {
        "source=rss&state=pending": lambda c: c["source"] == "rss" and c["state"] == "pending",
        "name=crawler-1": lambda c: "crawler-1" in c["name"].lower(),
        "name=CRAWLER-2&source=twitter": lambda c: (
            "crawler-2" in c["name"].lower() and c["source"] == "twitter"
        ),
        f"uuid={everything[5]['uuid']}": lambda c: c["uuid"] == everything[5]["uuid"],
        "name=100%25": lambda c: "100%" in c["name"],  # LIKE's wildcards match themselves
        "name=H_E": lambda c: "h_e" in c["name"],
    }
    for query, wanted in cases.items():
        paged = every_page(getter(client, token), f"{CRAWLERS}?limit=3&{query}")
        expected = [c for c in everything if wanted(c)]
        assert expected and paged == expected, query


def test_the_admin_pages_through_everyone_s_crawlers(client, make_user) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    anas = create(client, ana["token"], [body(n) for n in range(7)])
    bobs = create(client, bob["token"], [body(n) for n in range(8)])
    anas += create(client, ana["token"], [body(99)])

    listed = every_page(getter(client, ADMIN), f"{CRAWLERS}?limit=4")

    assert [c["id"] for c in listed] == sorted(anas + bobs)
    assert {c["user_id"] for c in listed} == {ana["id"], bob["id"]}
    assert [
        c["id"] for c in every_page(getter(client, bob["token"]), f"{CRAWLERS}?limit=4")
    ] == bobs


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(
            lambda cursor: cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB"), id="tampered"
        ),
        pytest.param(lambda cursor: "eyJhZnRlciI6MX0.forged", id="forged"),
        pytest.param(lambda cursor: cursor + "%00", id="nul"),
    ],
)
def test_a_cursor_that_was_not_given_is_a_400_naming_cursor(client, make_user, mangle) -> None:
    token = make_user()["token"]
    create(client, token, [body(n) for n in range(5)])
    cursor = cursor_of(client.get(f"{CRAWLERS}?limit=2", headers=bearer(token)))
    answer = client.get(f"{CRAWLERS}?limit=2&cursor={mangle(cursor)}", headers=bearer(token))
    assert answer.status_code == 400 and answer.json["error"]["field"] == "cursor"


def test_a_cursor_holds_only_for_its_caller_and_its_filters(client, make_user) -> None:
    ana, bob = make_user("ana")["token"], make_user("bob")["token"]
    create(client, ana, [body(n) for n in range(5)])
    create(client, bob, [body(n) for n in range(5)])
    cursor = cursor_of(client.get(f"{CRAWLERS}?limit=2&source=rss", headers=bearer(ana)))
    refused = {
        "another user": (bob, {"source": "rss"}),
        "the admin": (ADMIN, {"source": "rss"}),
        "no filter": (ana, {}),
        "another filter": (ana, {"source": "rss", "name": "crawler"}),
        "another source": (ana, {"source": "twitter"}),
    }
    for what, (token, filters) in refused.items():
        query = urlencode({**filters, "limit": 2, "cursor": cursor})
        answer = client.get(f"{CRAWLERS}?{query}", headers=bearer(token))
        assert answer.status_code == 400, what
        assert answer.json["error"]["field"] == "cursor", what
    kept = client.get(f"{CRAWLERS}?limit=3&source=rss&cursor={cursor}", headers=bearer(ana))
    assert kept.status_code == 200 and len(kept.json) == 3  # another limit: the same list


@pytest.mark.parametrize("limit", ["0", "1001", "x", "-1", "2.5", ""])
@pytest.mark.parametrize("path", [CRAWLERS, "/api/v1/nodes"])
def test_a_limit_out_of_range_is_refused_naming_limit(client, path: str, limit: str) -> None:
    answer = client.get(f"{path}?limit={limit}", headers=bearer(ADMIN))
    assert 400 <= answer.status_code < 500 and answer.json["error"]["field"] == "limit"


def test_nodes_page_in_id_order(client, serve_node) -> None:
    urls = [serve_node() for _ in range(7)]
    for url in urls:
        registered = client.post("/api/v1/nodes", json={"url": url}, headers=bearer(SECRET))
        assert registered.status_code == 201
    first = client.get("/api/v1/nodes?limit=3", headers=bearer(ADMIN))
    assert len(first.json) == 3 and "Link" in first.headers

    listed = every_page(getter(client, ADMIN), "/api/v1/nodes?limit=3")

    assert [n["url"] for n in listed] == urls
    assert [n["id"] for n in listed] == sorted(n["id"] for n in listed)
    assert set(listed[0]) >= {"id", "url", "state", "subscribers", "data_sources", "phi"}
    crawler_cursor = cursor_of(first)
    moved = client.get(f"{CRAWLERS}?cursor={crawler_cursor}", headers=bearer(ADMIN))
    assert moved.status_code == 400 and moved.json["error"]["field"] == "cursor"


def test_the_openapi_shows_the_paging_arguments_and_the_link_header(client) -> None:
    spec = client.get("/api/v1/openapi.json").json
    for path, extra in ((CRAWLERS, {"state", "source", "uuid", "name"}), ("/api/v1/nodes", set())):
        operation = spec["paths"][path]["get"]
        assert {p["name"] for p in operation["parameters"] if p["in"] == "query"} >= {
            "limit",
            "cursor",
            *extra,
        }
        assert "Link" in operation["responses"]["200"]["headers"]


def test_a_page_reads_its_own_crawlers_nodes_in_the_same_query(
    client, make_user, sessions, serve_node
):
    token = make_user()["token"]
    ids = create(client, token, [body(n) for n in range(6)])
    node = client.post("/api/v1/nodes", json={"url": serve_node()}, headers=bearer(SECRET))
    with sessions.begin() as session:
        session.add_all(Assignment(crawler_id=i, node_id=node.json["id"]) for i in ids[1::2])
        engine = session.get_bind()
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(" ".join(args[2].split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        listed = every_page(getter(client, token), f"{CRAWLERS}?limit=4")
    finally:
        event.remove(engine, "before_cursor_execute", record)

    assert [(c["id"], c["node_id"]) for c in listed] == [
        (i, node.json["id"] if n % 2 else None) for n, i in enumerate(ids)
    ]
    reads = [s for s in seen if s.startswith("SELECT") and "assignments" in s]
    assert len(reads) == 2 and all("FROM crawlers LEFT OUTER JOIN assignments" in s for s in reads)
    assert all("LIMIT" in s for s in reads), reads


def test_the_dashboard_pages_the_crawler_list_alike(client, make_user) -> None:
    token = make_user()["token"]
    ids = create(client, token, [body(n, "twitter") for n in range(130)])
    sign_in(client, token)
    first = client.get("/crawlers?source=twitter").get_data(as_text=True)
    shown = [int(i) for i in re.findall(r'data-crawler="(\d+)"', first)]
    assert shown == ids[:100]
    found = re.search(r'<a href="([^"]+)" rel="next">', first)
    assert found and "source=twitter" in found.group(1)
    second = client.get(html.unescape(found.group(1))).get_data(as_text=True)
    assert [int(i) for i in re.findall(r'data-crawler="(\d+)"', second)] == ids[100:]
    assert 'rel="next"' not in second
