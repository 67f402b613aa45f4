"""OPML read as real readers export it (tests/data/opml), refused when it is not usable, and
written back so that reading it gives the same groups of feeds, and the same crawlers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from blackwidow import feed_lists, opml

DATA = Path(__file__).parent.parent / "data" / "opml"


@pytest.mark.parametrize(
    ("name", "title", "count", "categories"),
    [
        ("netnewswire-onmymac.opml", "Subscriptions-OnMyMac.opml", 34, {()}),
        ("netnewswire-default-feeds.opml", "Default Feeds", 16, {()}),
        (
            "feedly.opml",
            "My subscriptions in feedly Cloud",
            5,
            {("Programming",), ("Games",)},
        ),
        ("newsblur.opml", "NewsBlur Feeds", 5, {("Security",), ("Programming",)}),
        (
            "inoreader.opml",
            "Subscriptions from Inoreader [https://www.inoreader.com]",
            3,
            {(), ("设计",)},
        ),
        (
            "miniflux.opml",
            "Miniflux",
            3,
            {("01 🚨 Alerts & Advisories",), ("02 📩 Curated Editions",)},
        ),
        (
            "rssowl-nested.opml",
            "RSSOwl Subscriptions",
            3,
            {("My Feeds", "Some Category"), ("My Feeds", "Another Category")},
        ),
    ],
)
def test_real_exports_give_their_feeds_and_categories(
    name: str, title: str, count: int, categories: set[tuple[str, ...]]
) -> None:
    read = opml.read((DATA / name).read_bytes())
    assert read.title == title
    assert len(read.feeds) == count == len({feed.url for feed in read.feeds})
    assert {feed.categories for feed in read.feeds} == categories
    assert all(feed.url.startswith(("http://", "https://")) for feed in read.feeds)


def test_a_feed_is_named_by_text_or_title_and_settings_outlines_are_not_feeds() -> None:
    """Tiny Tiny RSS puts its preferences in outlines without xmlUrl, as categories of none."""
    document = b"""<?xml version="1.0" encoding="utf-8"?><opml version="1.0"><head>
    <title>Tiny Tiny RSS Feed Export</title></head><body>
    <outline text="Only text" xmlUrl="https://a.example/rss"/>
    <outline title="Only title" xmlURL="https://b.example/rss"/>
    <outline xmlUrl="https://c.example/rss"/>
    <outline text="tt-rss-prefs" schema-version="120">
      <outline pref-name="ALLOW_DUPLICATE_POSTS" value="false"/></outline>
    <outline text="dup" xmlUrl="https://a.example/rss"/>
    </body></opml>"""
    read = opml.read(document)
    assert [(f.name, f.url) for f in read.feeds] == [
        ("Only text", "https://a.example/rss"),
        ("Only title", "https://b.example/rss"),
        ("https://c.example/rss", "https://c.example/rss"),
        ("dup", "https://a.example/rss"),
    ]


@pytest.mark.parametrize(
    ("document", "where", "says"),
    [
        (b"not xml at all", "document", "not XML"),
        (b"<rss><channel/></rss>", "document", "not OPML"),
        (b"<opml version='2.0'><head/></opml>", "body", "missing"),
        (b"<opml><body><outline text='empty category'/></body></opml>", "body", "no feeds"),
        (
            b"<opml><body><outline text='a'/><outline text='b'>"
            b"<outline xmlUrl='https://ok.example/'/><outline xmlUrl='ftp://x.example/f'/>"
            b"</outline></body></opml>",
            "body.outline[1].outline[1]",
            "xmlUrl: not an http(s) URL",
        ),
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            b'<!ENTITY lol2 "&lol;&lol;&lol;">]><opml><body>'
            b'<outline text="&lol2;" xmlUrl="https://a.example/"/></body></opml>',
            "document",
            "refused: EntitiesForbidden",
        ),
        (
            b"<opml><body>" + b"<outline text='c'>" * 20 + b"</outline>" * 20 + b"</body></opml>",
            "body" + ".outline[0]" * 17,
            "nested deeper",
        ),
    ],
)
def test_unusable_documents_are_refused_naming_the_part(
    document: bytes, where: str, says: str
) -> None:
    with pytest.raises(opml.OpmlError, match=re.escape(says)) as refused:
        opml.read(document)
    assert refused.value.where == where


def test_what_is_written_without_settings_reads_back_as_the_same_groups() -> None:
    urls = ["https://a.example/rss", "https://b.example/rss?x=1&y=2"]
    groups = [("Tech/Python", urls), ("News & more", ["http://c.example/feed"])]
    written = [opml.Written(name, [(u, u) for u in feeds], {}) for name, feeds in groups]
    read = opml.read(opml.write("Mine", written))
    assert (read.title, read.crawlers) == ("Mine", [])
    back = feed_lists.plan(read, "outline")
    assert [(p.name, [f.url for f in p.feeds]) for p in back] == groups


def test_a_crawlers_settings_are_written_in_the_namespace_and_read_back_the_same() -> None:
    settings = {
        "keywords": ["python", "Monty & Python"],
        "url_keys": {"drop": ["ref"]},
        "item_limit": 500,
        "retention_days": None,  # left out: the create's default
        "recollect_after": 3600,
        "schedule": {"every": 300},
        "enabled": False,
        "priority": "low",
    }
    feeds = [("https://a.example/rss", "A & co")]
    document = opml.write("Mine", [opml.Written("sports <python>", feeds, settings)])
    assert b'xmlns:blackwidow="urn:blackwidow:opml:1"' in document
    read = opml.read(document)
    assert read.feeds == []
    [crawler] = read.crawlers
    assert (crawler.name, crawler.where) == ("sports <python>", "body.outline[0]")
    assert crawler.settings == {k: v for k, v in settings.items() if v is not None}
    assert [(f.url, f.name, f.where) for f in crawler.feeds] == [
        ("https://a.example/rss", "A & co", "body.outline[0].outline[0]")
    ]


@pytest.mark.parametrize(
    ("inner", "where", "says"),
    [
        ("<outline text='cat'/>", "body.outline[0].outline[0]", "feeds only"),
        (
            "<outline xmlUrl='https://a.example/' b:enabled='true'/>",
            "body.outline[0].outline[0]",
            "on a feed inside",
        ),
        ("<outline xmlUrl='ftp://a.example/'/>", "body.outline[0].outline[0]", "http(s)"),
    ],
)
def test_a_crawler_outline_holds_feeds_only(inner: str, where: str, says: str) -> None:
    document = (
        "<opml xmlns:b='urn:blackwidow:opml:1'><body><outline text='c' b:keywords='[]'>"
        f"{inner}</outline></body></opml>"
    ).encode()
    with pytest.raises(opml.OpmlError, match=re.escape(says)) as refused:
        opml.read(document)
    assert refused.value.where == where


@pytest.mark.parametrize(
    ("group_by", "names"),
    [
        ("one-each", ["Feed 1", "Feed 2", "Feed 3"]),
        ("outline", ["My Feeds/Some Category", "My Feeds/Another Category"]),
        ("one-all", ["RSSOwl Subscriptions"]),
    ],
)
def test_each_grouping_plans_its_crawlers(group_by: str, names: list[str]) -> None:
    read = opml.read((DATA / "rssowl-nested.opml").read_bytes())
    planned = feed_lists.plan(read, group_by)
    assert [p.name for p in planned] == names
    assert sum(len(p.feeds) for p in planned) == 3


def test_a_group_larger_than_a_crawler_takes_is_split_in_parts() -> None:
    feeds = [opml.Feed(f"https://f{n}.example/", f"f{n}", ("Big",), "x") for n in range(250)]
    planned = feed_lists.plan(opml.Subscriptions(None, feeds), "outline")
    assert [(p.name, len(p.feeds)) for p in planned] == [
        ("Big", 100),
        ("Big (2)", 100),
        ("Big (3)", 50),
    ]


@pytest.mark.parametrize(
    ("group_by", "names"),
    [("outline", ["Unfiled", "News"]), ("one-all", ["Imported feeds"])],
)
def test_a_file_without_a_title_files_loose_feeds_under_a_name_of_its_own(
    group_by: str, names: list[str]
) -> None:
    feeds = [
        opml.Feed("https://a.example/", "a", (), "body.outline[0]"),
        opml.Feed("https://b.example/", "b", ("News",), "body.outline[1].outline[0]"),
    ]
    planned = feed_lists.plan(opml.Subscriptions(None, feeds), group_by)
    assert [p.name for p in planned] == names


def test_json_nested_past_the_decoders_depth_is_refused_as_not_json() -> None:
    """Named by the attribute whatever prefix the file gives the namespace."""
    deep = "[" * 100_000 + "]" * 100_000
    document = (
        "<opml xmlns:b='urn:blackwidow:opml:1'><body>"
        f"<outline text='c' b:schedule='{deep}'><outline xmlUrl='https://a.example/'/>"
        "</outline></body></opml>"
    ).encode()
    with pytest.raises(opml.OpmlError, match="not JSON") as refused:
        opml.read(document)
    assert refused.value.where == "body.outline[0].blackwidow:schedule"
