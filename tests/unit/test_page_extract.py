"""HTML listings read by configured paths: XPath and CSS, broken markup, missing fields, links."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sources.page.extract import PagePathError, PagePaths, compiled, extract_page
from sources.page.query import PageQuery

FETCHED_AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
PAGE_URL = "http://site.example/news/list?page=1"

LISTING = b"""<html><head><meta charset="utf-8"><title>News</title></head><body>
<ul>
  <li class="post" data-id="p1"><a class="title" href="/news/1">First  post</a>
    <span class="by">ana</span><time datetime="2026-01-01T10:00:00Z">Jan 1</time>
    <p>Body <b>one</b></p><p>continued</p></li>
  <li class="post" data-id="p2"><a class="title" href="2.html">Second &amp; last</a>
    <time datetime="Thu, 01 Jan 2026 11:00:00 GMT">Jan 1</time></li>
  <li class="post"><span>no link, no id</span></li>
</ul>
<a rel="next" href="?page=2">older</a>
</body></html>"""

XPATH_QUERY = {
    "url": PAGE_URL,
    "items": "//li[@class='post']",
    "fields": {
        "title": ".//a[@class='title']",
        "url": ".//a[@class='title']/@href",
        "text": ".//p",
        "author": ".//span[@class='by']",
        "published_at": ".//time/@datetime",
    },
    "next": "//a[@rel='next']/@href",
}

CSS_QUERY = {
    **XPATH_QUERY,
    "selector": "css",
    "items": "li.post",
    "fields": {
        "title": "a.title",
        "url": "a.title::attr(href)",
        "text": "p",
        "author": "span.by::text",
        "published_at": "time::attr(datetime)",
    },
    "next": "a[rel=next]::attr(href)",
}


def extracted(query: dict[str, Any], body: bytes = LISTING, url: str = PAGE_URL) -> Any:
    loaded = PageQuery().load(query)
    return extract_page(PagePaths.of(loaded), body, url, FETCHED_AT)


@pytest.mark.parametrize("query", [XPATH_QUERY, CSS_QUERY], ids=["xpath", "css"])
def test_items_fields_and_next_link_by_xpath_and_by_css(query: dict[str, Any]) -> None:
    page = extracted(query)

    first, second = page.items
    assert (first.id, first.url) == ("http://site.example/news/1", "http://site.example/news/1")
    assert (first.title, first.author, first.text) == ("First post", "ana", "Body one continued")
    assert first.published_at == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert first.source == "page" and first.fetched_at == FETCHED_AT
    assert (second.url, second.title) == ("http://site.example/news/2.html", "Second & last")
    assert second.published_at == datetime(2026, 1, 1, 11, tzinfo=UTC)
    assert page.next_url == "http://site.example/news/list?page=2"


def test_missing_fields_are_none_and_an_item_without_url_or_id_is_left_out() -> None:
    page = extracted(XPATH_QUERY)

    assert len(page.items) == 2  # the third <li> has neither
    assert (page.items[1].author, page.items[1].text) == (None, None)


def test_the_id_field_names_items_when_configured() -> None:
    query = {**XPATH_QUERY, "fields": {**XPATH_QUERY["fields"], "id": "./@data-id"}}

    assert [item.id for item in extracted(query).items] == ["p1", "p2"]


def test_a_css_attribute_alone_is_the_items_own() -> None:
    query = {**CSS_QUERY, "fields": {**CSS_QUERY["fields"], "id": "::attr(data-id)"}}

    assert [item.id for item in extracted(query).items] == ["p1", "p2"]


def test_broken_markup_is_read_as_a_browser_would() -> None:
    broken = b"""<div><li class="post"><a class="title" href="/a">Unclosed <b>bold
        <li class="post"><a class="title" href="/b">Second</a></p></div></span>
        <li class="post"><a class="title" href="javascript:alert(1)">script</a>"""

    page = extracted(XPATH_QUERY, broken)

    assert [item.url for item in page.items] == ["http://site.example/a", "http://site.example/b"]
    # libxml2 nests the second item inside the unclosed link, as a browser's DOM would
    assert page.items[0].title.startswith("Unclosed bold")
    assert page.items[1].title == "Second"
    assert page.next_url is None


@pytest.mark.parametrize("body", [b"", b"   ", b"\x00\xff\xfe garbage"])
def test_an_empty_or_garbage_document_has_no_items(body: bytes) -> None:
    page = extracted(XPATH_QUERY, body)

    assert (list(page.items), page.next_url) == ([], None)


def test_relative_urls_resolve_against_the_page_it_was_fetched_from() -> None:
    page = extracted(XPATH_QUERY, url="http://other.example/deep/path/index.html")

    assert [item.url for item in page.items] == [
        "http://other.example/news/1",
        "http://other.example/deep/path/2.html",
    ]
    assert page.next_url == "http://other.example/deep/path/index.html?page=2"


def test_a_base_element_is_what_links_are_relative_to() -> None:
    based = LISTING.replace(b"<title>", b'<base href="https://cdn.example/archive/"><title>')

    page = extracted(XPATH_QUERY, based)

    assert page.items[1].url == "https://cdn.example/archive/2.html"
    assert page.next_url == "https://cdn.example/archive/?page=2"


@pytest.mark.parametrize("path", ["//li/@class", "count(//li)", "string(//li)", "//li = 1"])
def test_an_item_path_that_matches_no_element_finds_no_items(path: str) -> None:
    assert list(extracted({**XPATH_QUERY, "items": path}).items) == []


@pytest.mark.parametrize(
    ("path", "selector", "reason"),
    [
        ("//li[", "xpath", "not a valid XPath"),
        ("x:y", "xpath", "not a usable XPath"),
        ("nosuch()", "xpath", "not a usable XPath"),
        ("li[", "css", "not a valid CSS selector"),
        ("//li", "css", "not a valid CSS selector"),
        ("//li\x00", "xpath", "not a valid XPath"),
        ("//li[@a='\ud800']", "xpath", "not a valid XPath"),
        ("li\\C\\/", "css", "not a valid CSS selector"),
    ],
)
def test_a_bad_path_is_refused_with_its_reason(path: str, selector: str, reason: str) -> None:
    with pytest.raises(PagePathError, match=reason):
        compiled(path, selector)
