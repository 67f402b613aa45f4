"""Source keys and canonical URLs: one spelling per address, one key per set of feeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sources.keys import source_key
from sources.urls import canonical_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTPS://Example.COM/Feed.xml", "https://example.com/Feed.xml"),  # path case is kept
        ("http://example.com:80/feed", "http://example.com/feed"),
        ("https://example.com:443/feed", "https://example.com/feed"),
        ("http://example.com:8080/feed", "http://example.com:8080/feed"),
        ("https://example.com:80/feed", "https://example.com:80/feed"),  # 80 is not https's
        ("http://example.com:443/feed", "http://example.com:443/feed"),
        ("https://example.com/feed#latest", "https://example.com/feed"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com?b=2&a=1", "https://example.com/?b=2&a=1"),
        ("https://example.com/f?b=2&a=1&b=3", "https://example.com/f?b=2&a=1&b=3"),
        ("http://[2001:DB8::1]:8080/feed", "http://[2001:db8::1]:8080/feed"),
        ("http://[::1]:80/feed", "http://[::1]/feed"),
        ("https://user:pw@Example.com:443/a", "https://user:pw@example.com/a"),
        ("https://reader@Example.com/a", "https://reader@example.com/a"),
        ("  https://example.com/feed  ", "https://example.com/feed"),
    ],
)
def test_canonical_url(url, expected):
    assert canonical_url(url) == expected


def key(*feeds: str, keywords: list[str] | None = None) -> str:
    query: dict = {"feeds": list(feeds)}
    if keywords is not None:
        query["keywords"] = keywords
    return source_key("rss", query)


BASE = key("https://a.example/feed", "https://b.example/feed")


@pytest.mark.parametrize(
    "same",
    [
        key("https://b.example/feed", "https://a.example/feed"),  # reordered
        key("https://a.example/feed", "https://b.example/feed", "https://a.example/feed"),
        key("HTTPS://A.example:443/feed#top", "https://b.example/feed"),  # spelled otherwise
        key("https://a.example/feed", "https://b.example/feed", keywords=["python"]),
        key("https://a.example/feed", "https://b.example/feed", keywords=["go", "rust"]),
    ],
)
def test_equal_feed_sets_share_a_key(same):
    assert same == BASE


@pytest.mark.parametrize(
    "different",
    [
        key("https://a.example/feed"),  # a subset
        key("https://a.example/feed", "https://b.example/feed", "https://c.example/feed"),
        key("https://a.example/feed", "https://b.example/other"),
        key("https://a.example/feed", "http://b.example/feed"),  # scheme matters
        key("https://a.example/feed", "https://b.example:8443/feed"),  # a non-default port
        key("https://a.example/feed", "https://b.example/feed?page=2"),  # the query matters
    ],
)
def test_different_feed_sets_get_different_keys(different):
    assert different != BASE


def test_pinned_key():
    # Pinned: a change to the key derivation (namespace, JSON form, canonical URL) would
    # orphan every running data source and move it to another node on the next release.
    assert key("https://example.com/feed.xml") == "087ba59e-3644-51e9-a2b7-7cfb5e66a628"


_CHILD = """
import json, sys
from sources.keys import source_key
print(json.dumps([source_key("rss", q) for q in json.load(sys.stdin)]))
"""


@pytest.mark.parametrize("hash_seed", ["0", "1", "12345"])
def test_same_key_in_another_process(hash_seed):
    queries = [
        {"feeds": ["https://example.com/feed.xml"]},
        {"feeds": ["https://b.example/feed", "https://a.example/feed"], "keywords": ["x"]},
        {"feeds": [f"https://feed{i}.example/rss" for i in range(20)]},
    ]
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    assert json.loads(child.stdout) == [source_key("rss", q) for q in queries]
