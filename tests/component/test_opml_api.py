"""OPML over REST on a real app and database: an import creates the crawlers or nothing,
naming the outline at fault; an export holds the caller's feeds and reads back the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.component.conftest import bearer
from tests.support import every_page

DATA = Path(__file__).parent.parent / "data" / "opml"
IMPORT = "/api/v1/crawlers/import"
OPML = {"Content-Type": "text/x-opml"}


def listed(client: FlaskClient, token: str) -> list[dict[str, Any]]:
    return every_page(lambda url: client.get(url, headers=bearer(token)), "/api/v1/crawlers")


def post(client: FlaskClient, token: str, body: bytes, query: str = "", **headers: str) -> Any:
    sent = {**bearer(token), **OPML, **headers}
    return client.post(f"{IMPORT}{query}", data=body, headers=sent)


@pytest.mark.parametrize(
    ("group_by", "crawlers", "feeds_each"),
    [("one-each", 16, [1] * 16), ("outline", 1, [16]), ("one-all", 1, [16])],
)
def test_an_import_creates_rss_crawlers_as_grouped(
    client: FlaskClient, make_user: Any, group_by: str, crawlers: int, feeds_each: list[int]
) -> None:
    token = make_user()["token"]
    document = (DATA / "netnewswire-default-feeds.opml").read_bytes()
    made = post(client, token, document, f"?group_by={group_by}&keywords=swift&keywords=mac")
    assert made.status_code == 201, made.json
    answered = made.json["crawlers"]
    assert len(answered) == crawlers
    assert [len(c["query"]["feeds"]) for c in answered] == feeds_each
    assert {c["source"] for c in answered} == {"rss"}
    assert all(c["query"]["keywords"] == ["swift", "mac"] for c in answered)
    assert [c["id"] for c in listed(client, token)] == [c["id"] for c in answered]
    if group_by == "one-each":
        assert answered[0]["name"] == "inessential.com"
    else:
        assert answered[0]["name"] == "Default Feeds"


def test_a_bad_feed_names_its_outline_and_nothing_is_created(
    client: FlaskClient, make_user: Any
) -> None:
    token = make_user()["token"]
    document = (
        b"<opml><body><outline text='ok' xmlUrl='https://ok.example/rss'/>"
        b"<outline text='Cat'><outline text='bad' xmlUrl='https://user:pw@bad.example/rss'/>"
        b"</outline></body></opml>"
    )
    refused = post(client, token, document)
    assert refused.status_code == 422
    error = refused.json["error"]
    assert error["field"] == "body.outline[1].outline[0]"
    assert "https://user:pw@bad.example/rss" in error["message"]
    assert "credentials" in error["message"]
    not_opml = post(client, token, b"<rss/>")
    assert (not_opml.status_code, not_opml.json["error"]["field"]) == (422, "document")
    assert listed(client, token) == []


def test_the_body_must_be_opml_and_bounded(client: FlaskClient, make_user: Any) -> None:
    token = make_user()["token"]
    as_json = client.post(IMPORT, json={"feeds": []}, headers=bearer(token))
    assert (as_json.status_code, as_json.json["error"]["field"]) == (415, "Content-Type")
    huge = b"<opml><body>" + b" " * (1024 * 1024) + b"</body></opml>"
    assert post(client, token, huge).status_code == 413
    bad_group = post(client, token, b"<opml/>", "?group_by=folders")
    assert (bad_group.status_code, bad_group.json["error"]["field"]) == (422, "group_by")
    too_long = post(
        client, token, (DATA / "rssowl-nested.opml").read_bytes(), "?keywords=" + "k" * 201
    )
    assert (too_long.status_code, too_long.json["error"]["field"]) == (422, "keywords.0")
    assert listed(client, token) == []


def test_an_export_holds_only_the_callers_feeds_and_reads_back_the_same(
    client: FlaskClient, make_user: Any
) -> None:
    ana, bob = make_user("ana")["token"], make_user("bob")["token"]
    post(client, ana, (DATA / "rssowl-nested.opml").read_bytes(), "?group_by=outline")
    post(client, bob, (DATA / "netnewswire-default-feeds.opml").read_bytes())
    exported = client.get("/api/v1/crawlers.opml", headers=bearer(ana))
    assert exported.status_code == 200
    assert exported.mimetype == "text/x-opml"
    assert b"example.org/feed1" in exported.data and b"inessential" not in exported.data
    before = [(c["name"], c["query"]["feeds"]) for c in listed(client, ana)]
    carol = make_user("carol")["token"]
    again = post(client, carol, exported.data, "?group_by=outline")
    assert again.status_code == 201, again.json
    assert [(c["name"], c["query"]["feeds"]) for c in again.json["crawlers"]] == before


def test_feeds_crawled_already_or_listed_twice_are_skipped(
    client: FlaskClient, make_user: Any
) -> None:
    """Compared as the source key spells them, and by keyword filter (any order and case)."""
    token = make_user()["token"]
    mine = {"feeds": ["https://a.example/rss"], "keywords": ["Python", "rust"]}
    crawler = {"name": "mine", "source": "rss", "query": mine}
    made = client.post("/api/v1/crawlers", json=crawler, headers=bearer(token)).json
    document = (
        b"<opml><body><outline text='A' xmlUrl='HTTPS://A.example:443/rss'/>"
        b"<outline text='B' xmlUrl='https://b.example/rss'/>"
        b"<outline text='Cat'><outline text='B again' xmlUrl='https://b.example/rss#top'/>"
        b"</outline></body></opml>"
    )
    first = post(client, token, document, "?keywords=RUST&keywords=python")
    assert first.status_code == 201, first.json
    assert [c["query"]["feeds"] for c in first.json["crawlers"]] == [["https://b.example/rss"]]
    assert first.json["skipped"] == [
        {
            "url": "HTTPS://A.example:443/rss",
            "outline": "body.outline[0]",
            "crawler_id": made["id"],
        },
        {
            "url": "https://b.example/rss#top",
            "outline": "body.outline[2].outline[0]",
            "crawler_id": None,
        },
    ]
    again = post(client, token, document, "?keywords=rust&keywords=python")
    assert (again.status_code, again.json["crawlers"]) == (201, [])
    assert len(again.json["skipped"]) == 3
    other_filter = post(client, token, document, "?keywords=go")
    assert len(other_filter.json["crawlers"]) == 2
    assert len(listed(client, token)) == 4


def test_an_import_of_more_new_feeds_than_a_batch_takes_is_refused(
    client: FlaskClient, make_user: Any
) -> None:
    token = make_user()["token"]
    outlines = b"".join(b"<outline xmlUrl='https://f%d.example/'/>" % n for n in range(1001))
    refused = post(
        client, token, b"<opml><body>" + outlines + b"</body></opml>", "?group_by=one-all"
    )
    assert refused.status_code == 422
    assert refused.json["error"]["field"] == "body"
    assert "1001 new feeds" in refused.json["error"]["message"]
    assert listed(client, token) == []


def test_feeds_outside_any_category_go_to_a_crawler_named_after_the_file(
    client: FlaskClient, make_user: Any
) -> None:
    token = make_user()["token"]
    made = post(client, token, (DATA / "inoreader.opml").read_bytes(), "?group_by=outline")
    assert made.status_code == 201, made.json
    assert [(c["name"], len(c["query"]["feeds"])) for c in made.json["crawlers"]] == [
        ("Subscriptions from Inoreader [https://www.inoreader.com]", 1),
        ("设计", 2),
    ]
