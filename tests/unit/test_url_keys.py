"""The key resolver: which spellings of a link are one key, with and without a crawler's rules."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from sources.rss.parse import parse_feed
from sources.rss.query import RssQuery, rss_fetch_target
from sources.url_keys import UrlKeys, key_rules, resolved_url

PLAIN = "https://news.example/a?id=7&page=2"

# (url, rules, expected key)
CASES = [
    ("HTTPS://News.Example:443/a?page=2&id=7#top", UrlKeys(), PLAIN),
    ("https://news.example/a?utm_source=x&id=7&utm_medium=y&page=2", UrlKeys(), PLAIN),
    ("https://news.example/a?id=7&page=2&fbclid=1&gclid=2&msclkid=3", UrlKeys(), PLAIN),
    ("https://news.example/a?id=7&page=2&mc_cid=1&mc_eid=2", UrlKeys(), PLAIN),
    ("https://news.example/a?callback=jQuery123&id=7&page=2&_=1700000000", UrlKeys(), PLAIN),
    ("https://news.example/a?id=7&jsonp=f&cb=9&nocache=1&page=2", UrlKeys(), PLAIN),
    ("https://news.example/a?UTM_Campaign=z&id=7&page=2", UrlKeys(), PLAIN),
    ("http://news.example:80/", UrlKeys(), "http://news.example/"),
    ("http://news.example:8080/x?b=2&a=1", UrlKeys(), "http://news.example:8080/x?a=1&b=2"),
    ("https://news.example/a?id=7&page=2&session=s", UrlKeys(drop=frozenset({"session"})), PLAIN),
    (
        "https://news.example/a?id=7&page=2",
        UrlKeys(drop=frozenset({"page"})),
        "https://news.example/a?id=7",
    ),
    (
        "https://news.example/a?id=7&callback=c",
        UrlKeys(keep=frozenset({"callback"})),
        "https://news.example/a?callback=c&id=7",
    ),
    (
        "https://news.example/a?utm_source=x&utm_medium=y",
        UrlKeys(keep=frozenset({"utm_source"})),
        "https://news.example/a?utm_source=x",
    ),
    ("https://news.example/a?q=a+b&q=a", UrlKeys(), "https://news.example/a?q=a&q=a+b"),
]


@pytest.mark.parametrize(("url", "keys", "expected"), CASES)
def test_resolved_url(url: str, keys: UrlKeys, expected: str) -> None:
    assert resolved_url(url, keys) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, UrlKeys()),
        ({"url_keys": {"drop": ["Session"], "keep": []}}, UrlKeys(drop=frozenset({"session"}))),
        ({"url_keys": {"keep": ["CB"]}}, UrlKeys(keep=frozenset({"cb"}))),
    ],
)
def test_rules_of_a_query(query: dict, expected: UrlKeys) -> None:
    assert UrlKeys.of(query) == expected


def test_rules_are_part_of_the_fetch_target_only_when_given() -> None:
    feeds = {"feeds": ["https://news.example/rss"]}
    with_rules = {**feeds, "url_keys": {"drop": ["Session"], "keep": []}}
    assert "url_keys" not in rss_fetch_target(feeds)
    assert "url_keys" not in rss_fetch_target({**feeds, "url_keys": {"drop": [], "keep": []}})
    assert rss_fetch_target(with_rules)["url_keys"] == {"drop": ["session"]}
    assert key_rules(with_rules) == {"drop": ["session"]}


@pytest.mark.parametrize(
    ("rules", "field"),
    [
        ({"drop": "utm_x"}, "drop"),
        ({"keep": [""]}, "keep"),
        ({"drop": ["x"] * 51}, "drop"),
        ({"other": []}, "other"),
    ],
)
def test_bad_rules_are_refused_naming_the_field(rules: dict, field: str) -> None:
    errors = RssQuery().validate({"feeds": ["https://news.example/rss"], "url_keys": rules})
    assert field in errors["url_keys"]


FEED = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>
<item><title>one</title><link>https://news.example/a?id=7&amp;utm_source=rss</link></item>
<item><title>again</title><link>https://news.example/a?utm_medium=x&amp;id=7#c</link></item>
<item><title>other session</title><link>https://news.example/a?id=7&amp;session=9</link></item>
</channel></rss>"""


def _ids(keys: UrlKeys) -> list[str]:
    at = datetime(2024, 5, 1, tzinfo=UTC)
    items, _, _ = parse_feed(FEED, "https://news.example/rss", at, {}, keys=keys)
    return [item.id for item in items]


def test_entries_without_guid_are_known_by_their_resolved_link() -> None:
    bare = "sha1:" + hashlib.sha1(b"https://news.example/a?id=7").hexdigest()
    assert _ids(UrlKeys())[0] == bare
    assert len(_ids(UrlKeys())) == 2  # tracking parameters make no second item
    assert _ids(UrlKeys(drop=frozenset({"session"}))) == [bare]  # the crawler's rule, too
