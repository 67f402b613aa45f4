"""Page and json crawlers end to end: hub and node processes reading the local listing site,
items read back through the REST API; bad paths refused by name."""

from __future__ import annotations

from typing import Any

from tests.servers.listing_site import ListingSite
from tests.support import wait_until

FIELDS = {
    "title": ".//h2/a",
    "url": ".//h2/a/@href",
    "author": ".//span[@class='author']",
    "published_at": ".//time/@datetime",
}


def page_query(site: ListingSite, **changes: Any) -> dict[str, Any]:
    query = {
        "url": site.url("/news/1.html"),
        "items": "//div[@class='post']",
        "fields": FIELDS,
        "next": "//a[@rel='next']/@href",
        "page_interval": 0,
    }
    return {**query, **changes}


def json_query(site: ListingSite, **changes: Any) -> dict[str, Any]:
    query = {
        "url": site.url("/api/cursor"),
        "items": "$.data[*]",
        "fields": {"id": "$.id", "title": "$.title", "url": "$.links.html"},
        "pagination": {"by": "cursor", "param": "after", "cursor": "$.next"},
        "page_interval": 0,
    }
    return {**query, **changes}


def test_page_and_json_crawlers_store_every_item_of_their_listing(
    cluster: Any, site: ListingSite
) -> None:
    c = cluster(1)
    token = c.user()
    page = c.create(token, "page", page_query(site))
    api = c.create(token, "json", json_query(site))

    page_items = wait_until(
        lambda: len(c.items(token, page["id"])) == 5 and c.items(token, page["id"]),
        timeout=60,
        what="page items",
    )
    api_items = wait_until(
        lambda: len(c.items(token, api["id"])) == 5 and c.items(token, api["id"]),
        timeout=60,
        what="json items",
    )

    assert {item["title"] for item in page_items} == {"One", "Two", "Three", "Four", "Five"}
    assert {item["source"] for item in page_items} == {"page"}
    five = next(item for item in page_items if item["title"] == "Five")
    assert five["url"] == five["id"] == site.url("/news/posts/5.html")
    assert five["author"] == "ana" and five["published_at"].startswith("2026-01-05T10:00:00")
    assert sorted(item["id"] for item in api_items) == [f"post-{n}" for n in range(1, 6)]
    assert {item["url"] for item in api_items} == {item["url"] for item in page_items}
    assert c.get(token, page["id"])["state"] == "running"
    health = c.feed_health(token, page["id"])
    assert health is not None and health[0]["url"] == site.url("/news/1.html")
    assert health[0]["error"] is None and health[0]["last_status"] in (200, 304)


def test_equal_configurations_share_one_data_source_whatever_their_keywords(
    cluster: Any, site: ListingSite
) -> None:
    c = cluster(1)
    token = c.user()
    first = c.create(token, "page", page_query(site))
    twin = c.create(
        token, "page", page_query(site, keywords=["five"], url=site.url("/news/1.html#top"))
    )
    other = c.create(token, "page", page_query(site, page_limit=1))

    wait_until(
        lambda: [item["title"] for item in c.items(token, twin["id"])] == ["Five"],
        timeout=60,
        what="the keyword's item",
    )
    assert twin["uuid"] == first["uuid"] != other["uuid"]
    wait_until(
        lambda: all(
            c.get(token, crawler["id"])["state"] == "running" for crawler in (first, other)
        ),
        timeout=60,
        what="every crawler running",
    )
    health = c.node_health(c.nodes[0])
    assert len(health["data_sources"]) == 2


def test_a_bad_path_is_refused_naming_its_field(cluster: Any, site: ListingSite) -> None:
    c = cluster(0)
    token = c.user()
    cases = [
        ("page", page_query(site, fields={**FIELDS, "title": ".//h2/a["}), "query.fields.title"),
        ("page", page_query(site, next="//a[@rel='next'"), "query.next"),
        ("page", page_query(site, selector="css", items="div.post >"), "query.items"),
        ("json", json_query(site, items="$.data[*"), "query.items"),
    ]
    for source, query, field in cases:
        body = {"name": "bad", "source": source, "query": query}
        response = c.call("POST", "/api/v1/crawlers", token, json=body)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["field"] == field
    assert c.call("GET", "/api/v1/crawlers", token).json() == []
