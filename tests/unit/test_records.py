"""Records of configured listings made items: ids, URLs and times; and their source keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sources.keys import source_key
from sources.records import absolute_url, item_from_record, published_at
from sources.registry import SOURCE_TYPES

FETCHED_AT = datetime(2026, 1, 2, tzinfo=UTC)
PAGE = "http://site.example/a/b.html"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01T10:00:00Z", datetime(2026, 1, 1, 10, tzinfo=UTC)),
        ("2026-01-01T10:00:00", datetime(2026, 1, 1, 10, tzinfo=UTC)),
        ("Thu, 01 Jan 2026 10:00:00 +0100", datetime(2026, 1, 1, 9, tzinfo=UTC)),
        ("1767261600", datetime(2026, 1, 1, 10, tzinfo=UTC)),
        ("1767261600000", datetime(2026, 1, 1, 10, tzinfo=UTC)),  # milliseconds
        ("yesterday", None),
        ("", None),
        (None, None),
        ("1e400", None),
    ],
)
def test_published_at_reads_the_usual_spellings(text: str | None, expected: Any) -> None:
    assert published_at(text) == expected


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("c.html", "http://site.example/a/c.html"),
        ("/c", "http://site.example/c"),
        ("//cdn.example/x", "http://cdn.example/x"),
        ("https://other.example/p?q=1", "https://other.example/p?q=1"),
        ("  c.html  ", "http://site.example/a/c.html"),
        ("javascript:void(0)", None),
        ("mailto:a@b.example", None),
        ("http://site.example:99999/", None),
        ("", None),
        (None, None),
    ],
)
def test_links_resolve_against_their_page_and_only_web_links_are_kept(
    link: str | None, expected: str | None
) -> None:
    assert absolute_url(link, PAGE) == expected


def test_an_item_is_identified_by_its_id_field_else_its_url_key() -> None:
    by_url = item_from_record("page", {"url": "/X#frag", "title": " A \n title "}, PAGE, FETCHED_AT)
    tracked = item_from_record("page", {"url": "/X?utm_source=feed&b=2&a=1"}, PAGE, FETCHED_AT)
    by_id = item_from_record("json", {"url": "/x", "id": " 42 "}, PAGE, FETCHED_AT)

    assert by_url is not None and by_id is not None
    assert (by_url.id, by_url.url, by_url.title) == (
        "http://site.example/X",
        "http://site.example/X#frag",
        "A title",
    )
    assert by_id.id == "42"
    assert tracked is not None and tracked.id == "http://site.example/X?a=1&b=2"
    assert item_from_record("page", {"title": "no way to name it"}, PAGE, FETCHED_AT) is None


PAGE_QUERY = {
    "url": "http://Site.example:80/news",
    "items": "//li",
    "fields": {"url": "./a/@href"},
}


@pytest.mark.parametrize("source", ["page", "json"])
def test_equal_configurations_have_one_source_key_whatever_their_keywords(source: str) -> None:
    schema = SOURCE_TYPES[source].query_schema()
    query = (
        {**PAGE_QUERY, "items": "$.data[*]", "fields": {"url": "$.u"}}
        if source == "json"
        else PAGE_QUERY
    )
    plain = schema.load(query)
    spelled = schema.load({**query, "url": "http://site.example/news", "keywords": ["x"]})
    deeper = schema.load({**query, "page_limit": 5})

    assert source_key(source, plain) == source_key(source, spelled)
    assert source_key(source, plain) != source_key(source, deeper)
