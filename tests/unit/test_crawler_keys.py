"""Which credential a crawler's query names: only sources that connect with one name any."""

from __future__ import annotations

import pytest

from blackwidow.crawler_keys import credential_name


@pytest.mark.parametrize(
    ("source", "query", "name"),
    [
        ("rss", {"feeds": ["https://example.com/feed.xml"]}, None),
        ("rss", {"feeds": ["https://example.com/feed.xml"], "credential": "x"}, None),
        ("twitter", {"terms": ["a"], "credential": "default"}, "default"),
        ("twitter", {"terms": ["a"], "credential": "team-app"}, "team-app"),
        ("twitter", {"terms": ["a"]}, "default"),
        ("datasift", {"query": "q", "credential": "paid"}, "paid"),
    ],
)
def test_credential_name(source: str, query: dict, name: str | None) -> None:
    assert credential_name(source, query) == name
