"""OPML over REST on a real app and database: an import creates the crawlers or nothing,
naming the outline at fault; an export holds the caller's feeds and reads back the same."""

from __future__ import annotations

import re
import shutil
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import listparser
import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blackwidow import name_rule
from blackwidow.app import create_app
from tests.component.conftest import ADMIN, bearer, hub_settings
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


SPORTS = {
    "name": "sports-python",
    "source": "rss",
    "query": {
        "feeds": ["https://sports.example/rss", "https://scores.example/atom?x=1&y=2"],
        "keywords": ["python", "Monty Python"],
        "url_keys": {"drop": ["ref"], "keep": []},
    },
    "item_limit": 500,
    "retention_days": 30,
    "recollect_after": 604800,
    "enabled": False,
    "priority": "high",
    "schedule": {"cron": "*/15 * * * *", "timezone": "Europe/Paris"},
}
PLAIN = {"name": "news", "source": "rss", "query": {"feeds": ["https://news.example/rss"]}}
DEFINITION = ("name", "source", "query", "item_limit", "retention_days", "recollect_after")
DEFINITION += ("enabled", "priority", "schedule")
NS = "{urn:blackwidow:opml:1}"


def defined(client: FlaskClient, token: str) -> list[dict[str, Any]]:
    """The caller's crawlers as their creates define them, in id order."""
    return [{k: c[k] for k in DEFINITION} for c in listed(client, token)]


def exported_by(client: FlaskClient, make_user: Any) -> tuple[str, bytes]:
    """A user's token and the export of their two crawlers, SPORTS and PLAIN."""
    token = make_user("ana")["token"]
    for body in (SPORTS, PLAIN):
        made = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
        assert made.status_code == 201, made.json
    exported = client.get("/api/v1/crawlers.opml", headers=bearer(token))
    assert exported.status_code == 200
    return token, exported.data


def test_an_export_carries_each_crawlers_definition_in_its_namespace(
    client: FlaskClient, make_user: Any
) -> None:
    _, document = exported_by(client, make_user)
    assert b'xmlns:blackwidow="urn:blackwidow:opml:1"' in document
    sports, news = ET.fromstring(document).findall("body/outline")
    assert sports.get("text") == "sports-python"
    assert {k: v for k, v in sports.attrib.items() if k.startswith(NS)} == {
        f"{NS}keywords": '["python","Monty Python"]',
        f"{NS}urlKeys": '{"drop":["ref"],"keep":[]}',
        f"{NS}itemLimit": "500",
        f"{NS}retentionDays": "30",
        f"{NS}recollectAfter": "604800",
        f"{NS}schedule": '{"cron":"*/15 * * * *","timezone":"Europe/Paris"}',
        f"{NS}enabled": "false",
        f"{NS}priority": "high",
    }
    assert [f.get("xmlUrl") for f in sports] == SPORTS["query"]["feeds"]
    assert {k.removeprefix(NS) for k in news.attrib if k.startswith(NS)} == {
        "keywords",
        "enabled",
        "priority",
    }
    assert news.get(f"{NS}keywords") == "[]"


def test_a_reader_that_knows_nothing_of_the_namespace_reads_the_export_as_feeds(
    client: FlaskClient, make_user: Any
) -> None:
    """As a feed reader's OPML parser (listparser) reads it: well formed, each feed with its
    crawler as its category; and as plain XML: OPML 2.0, no attribute outside OPML's own but
    in the namespace."""
    _, document = exported_by(client, make_user)
    urls = [*SPORTS["query"]["feeds"], *PLAIN["query"]["feeds"]]
    read = listparser.parse(document.decode())
    assert not read.bozo, read.get("bozo_exception")
    assert [(f.url, f.title, f.categories) for f in read.feeds] == [
        (url, url, [[name]])
        for url, name in zip(urls, ["sports-python", "sports-python", "news"], strict=True)
    ]
    root = ET.fromstring(document)
    assert (root.tag, root.get("version")) == ("opml", "2.0")
    assert root.findtext("head/title") and root.findtext("head/dateCreated")
    feeds = [o for o in root.iter("outline") if o.get("xmlUrl")]
    assert [(f.get("type"), f.get("text"), f.get("xmlUrl")) for f in feeds] == [
        ("rss", url, url) for url in urls
    ]
    opml_own = {"text", "title", "type", "xmlUrl"}
    assert {k for o in root.iter("outline") for k in o.attrib if not k.startswith(NS)} <= opml_own


def test_an_export_imported_again_creates_nothing_and_says_so(
    client: FlaskClient, make_user: Any
) -> None:
    """The regression: by outline, the export made a second `sports-python` without keywords
    beside the original, collecting everything."""
    token, document = exported_by(client, make_user)
    before = listed(client, token)
    for query in ("?group_by=outline", "", "?group_by=one-all"):
        again = post(client, token, document, query)
        assert again.status_code == 201, again.json
        assert again.json["crawlers"] == []
        assert again.json["skipped_crawlers"] == [
            {
                "name": c["name"],
                "outline": f"body.outline[{n}]",
                "crawler_id": c["id"],
                "differs": [],
            }
            for n, c in enumerate(before)
        ]
    assert listed(client, token) == before


def test_an_export_imported_onto_a_fresh_hub_recreates_the_same_crawlers(
    client: FlaskClient, make_user: Any, sqlite_template: Path, tmp_path: Path
) -> None:
    original, document = exported_by(client, make_user)
    home = tmp_path / "fresh"
    home.mkdir()
    shutil.copyfile(sqlite_template, home / "hub.db")
    fresh_app = create_app(hub_settings(f"sqlite:///{home / 'hub.db'}", home))
    fresh = fresh_app.test_client()
    token = fresh.post("/api/v1/users", json={"name": "ana"}, headers=bearer(ADMIN)).json["token"]
    imported = post(fresh, token, document, "?group_by=outline")
    assert imported.status_code == 201, imported.json
    assert defined(fresh, token) == defined(client, original)
    assert defined(fresh, token)[0] == {**SPORTS, "query": {**SPORTS["query"]}}
    again = post(fresh, token, fresh.get("/api/v1/crawlers.opml", headers=bearer(token)).data)
    assert (again.json["crawlers"], len(again.json["skipped_crawlers"])) == ([], 2)
    with fresh_app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()


def test_a_crawler_of_the_same_name_defined_otherwise_is_reported_and_left_alone(
    client: FlaskClient, make_user: Any
) -> None:
    token, document = exported_by(client, make_user)
    sports = listed(client, token)[0]
    changed = {"item_limit": 50, "query": {**SPORTS["query"], "keywords": ["rust"]}}
    assert client.patch(f"/api/v1/crawlers/{sports['id']}", json=changed, headers=bearer(token))
    before = defined(client, token)
    again = post(client, token, document, "?group_by=outline")
    assert again.status_code == 201, again.json
    assert again.json["crawlers"] == []
    assert again.json["skipped_crawlers"][0] == {
        "name": "sports-python",
        "outline": "body.outline[0]",
        "crawler_id": sports["id"],
        "differs": ["keywords", "item_limit"],
    }
    assert again.json["skipped_crawlers"][1]["differs"] == []
    assert defined(client, token) == before


@pytest.mark.parametrize(
    ("attribute", "says"),
    [
        ('itemLimit="many"', "whole number"),
        ('itemLimit="0"', "greater than"),
        ('keywords="python"', "not JSON"),
        ('keywords="[1]"', "string"),
        ("""schedule='{"cron": "x"}'""", "cron"),
        ('enabled="yes"', "true or false"),
        ('itemlimit="5"', "unknown attribute"),
    ],
)
def test_a_bad_crawler_outline_names_its_attribute_and_nothing_is_created(
    client: FlaskClient, make_user: Any, attribute: str, says: str
) -> None:
    token = make_user()["token"]
    document = (
        "<opml version='2.0' xmlns:blackwidow='urn:blackwidow:opml:1'><body>"
        "<outline text='good' blackwidow:keywords='[]'>"
        "<outline xmlUrl='https://good.example/rss'/></outline>"
        f"<outline text='bad' blackwidow:{attribute}>"
        "<outline xmlUrl='https://bad.example/rss'/></outline></body></opml>"
    ).encode()
    refused = post(client, token, document)
    assert refused.status_code == 422, refused.json
    field = "body.outline[1].blackwidow:" + attribute.split("=")[0]
    assert refused.json["error"]["field"] == field
    assert says in refused.json["error"]["message"]
    assert listed(client, token) == []


def test_a_bad_feed_in_a_crawler_outline_is_named_and_keywords_are_the_files(
    client: FlaskClient, make_user: Any
) -> None:
    token = make_user()["token"]
    document = (
        b"<opml version='2.0' xmlns:blackwidow='urn:blackwidow:opml:1'><body>"
        b"<outline text='c' blackwidow:keywords='[]'><outline xmlUrl='https://ok.example/'/>"
        b"<outline xmlUrl='https://user:pw@bad.example/rss'/></outline></body></opml>"
    )
    refused = post(client, token, document)
    assert refused.status_code == 422
    assert refused.json["error"]["field"] == "body.outline[0].outline[1]"
    assert "https://user:pw@bad.example/rss" in refused.json["error"]["message"]
    good = document.replace(b"user:pw@", b"")
    with_keywords = post(client, token, good, "?keywords=go")
    assert (with_keywords.status_code, with_keywords.json["error"]["field"]) == (422, "keywords")
    unnamed = post(client, token, good.replace(b"text='c'", b"text=''"))
    assert (unnamed.status_code, unnamed.json["error"]["field"]) == (422, "body.outline[0].text")
    assert listed(client, token) == []


# a crawler name as anyone may type it: any text the name rule takes, padded or not
_FIT_NAMES = st.text(min_size=1, max_size=30).filter(lambda n: _fits(n.strip()))
_TYPED_NAMES = st.tuples(st.sampled_from(["", " ", "  ", "\u00a0"]), _FIT_NAMES).map(
    lambda padded_name: f"{padded_name[0]}{padded_name[1]}{padded_name[0]}"
)
# keywords hold anything but NUL, what XML cannot carry among it
_KEYWORDS = st.lists(
    st.one_of(
        st.text(min_size=1, max_size=12).filter(lambda k: "\x00" not in k),
        st.sampled_from(["\x07bell", "esc\x1b", "\ufffe", "\x85next"]),
    ),
    max_size=3,
)


def _fits(name: str) -> bool:
    try:
        return name_rule.checked(name) == name
    except name_rule.NameRefused:
        return False


def _exported(client: FlaskClient, token: str) -> bytes:
    exported = client.get("/api/v1/crawlers.opml", headers=bearer(token))
    assert exported.status_code == 200
    return re.sub(rb"<dateCreated>[^<]*</dateCreated>", b"", exported.data)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    crawlers=st.lists(
        st.tuples(_TYPED_NAMES, _KEYWORDS), min_size=1, max_size=4, unique_by=lambda c: c[0].strip()
    )
)
def test_an_export_imported_as_another_user_exports_the_same_document(
    client: FlaskClient, make_user: Any, crawlers: list[tuple[str, list[str]]]
) -> None:
    """Any name the API takes (trimmed, as an import trims it) and any keywords: the export is
    well formed, imported as another user it makes the same crawlers, whose export is the
    same document, and imported by its own user it makes nothing."""
    first, second = (make_user(f"user {uuid.uuid4()}")["token"] for _ in range(2))
    for n, (name, keywords) in enumerate(crawlers):
        query = {"feeds": [f"https://feeds.example/{n}"], "keywords": keywords}
        made = client.post(
            "/api/v1/crawlers",
            json={"name": name, "source": "rss", "query": query},
            headers=bearer(first),
        )
        assert made.status_code == 201, made.json
        assert made.json["name"] == name.strip()
    document = _exported(client, first)
    ET.fromstring(document)  # well formed
    imported = post(client, second, document)
    assert imported.status_code == 201, imported.json
    assert defined(client, second) == defined(client, first)
    assert _exported(client, second) == document
    again = post(client, first, document)
    assert (again.json["crawlers"], len(again.json["skipped_crawlers"])) == ([], len(crawlers))
