"""JSON answers read by configured JSONPaths: fields, ids, relative URLs, cursors, page numbers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from sources.jsonapi.extract import JsonPathError, JsonPaths, compiled, extract_json, with_param
from sources.jsonapi.query import JsonQuery
from sources.records import PageError

FETCHED_AT = datetime(2026, 1, 2, tzinfo=UTC)
API_URL = "http://api.example/v1/posts?lang=en"

ANSWER = {
    "data": [
        {
            "id": 7,
            "title": "Seven",
            "links": {"self": "/posts/7"},
            "user": {"name": "ana"},
            "created": 1767225600,
            "body": "text",
        },
        {"id": "8", "title": "Eight", "links": {}, "created": "2026-01-01T12:00:00+01:00"},
        {"title": "no id"},
        "not an object",
    ],
    "meta": {"next": "abc=="},
}

QUERY = {
    "url": API_URL,
    "items": "$.data[*]",
    "fields": {
        "id": "$.id",
        "title": "$.title",
        "url": "$.links.self",
        "author": "$.user.name",
        "published_at": "$.created",
        "text": "$.body",
    },
}
BY_CURSOR = {"by": "cursor", "param": "after", "cursor": "$.meta.next"}
BY_PAGE = {"by": "page", "param": "page", "start": 1}


def extracted(query: dict[str, Any], answer: Any = ANSWER, url: str = API_URL) -> Any:
    paths = JsonPaths.of(JsonQuery().load(query))
    return extract_json(paths, json.dumps(answer).encode(), url, FETCHED_AT)


def test_fields_by_jsonpath() -> None:
    seven, eight = extracted(QUERY).items

    assert (seven.id, seven.title, seven.author, seven.text) == ("7", "Seven", "ana", "text")
    assert seven.url == "http://api.example/posts/7"
    assert seven.published_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert (eight.id, eight.url, eight.author) == ("8", None, None)
    assert eight.published_at == datetime(2026, 1, 1, 11, tzinfo=UTC)
    assert seven.source == "json"


def test_without_an_id_path_the_canonical_url_is_the_id() -> None:
    fields = {"title": "$.title", "url": "$.links.self"}
    page = extracted({**QUERY, "fields": fields}, url="HTTP://API.EXAMPLE:80/v1/posts")

    assert [item.id for item in page.items] == ["http://api.example/posts/7"]


def test_a_path_to_the_list_itself_reads_its_elements() -> None:
    assert len(extracted({**QUERY, "items": "$.data"}).items) == 2


def test_a_filter_path_selects_items() -> None:
    page = extracted({**QUERY, "items": "$.data[?(@.title == 'Eight')]"})

    assert [item.id for item in page.items] == ["8"]


def test_without_pagination_there_is_no_next_page() -> None:
    assert extracted(QUERY).next_url is None


def test_by_cursor_the_next_page_carries_the_answers_cursor() -> None:
    page = extracted({**QUERY, "pagination": BY_CURSOR})

    assert page.next_url == "http://api.example/v1/posts?lang=en&after=abc%3D%3D"


@pytest.mark.parametrize("cursor", [None, "", "missing"])
def test_by_cursor_no_cursor_is_the_last_page(cursor: str | None) -> None:
    meta = {} if cursor == "missing" else {"next": cursor}
    page = extracted({**QUERY, "pagination": BY_CURSOR}, {**ANSWER, "meta": meta})

    assert page.next_url is None


def test_by_page_number_the_next_page_is_one_on_until_a_page_is_empty() -> None:
    query = {**QUERY, "pagination": BY_PAGE}
    first_url = JsonPaths.of(JsonQuery().load(query)).first_url(API_URL)

    assert first_url == "http://api.example/v1/posts?lang=en&page=1"
    assert extracted(query, url=first_url).next_url == "http://api.example/v1/posts?lang=en&page=2"
    assert extracted(query, {"data": []}, url=first_url).next_url is None


def test_with_param_replaces_a_parameter_and_keeps_the_others() -> None:
    assert with_param("http://a.example/?p=1&q=x", "p", "2") == "http://a.example/?q=x&p=2"


@pytest.mark.parametrize("body", [b"<html>", b"\xff\xfe\x00", b""])
def test_an_answer_that_is_not_json_is_a_page_error(body: bytes) -> None:
    paths = JsonPaths.of(JsonQuery().load(QUERY))

    with pytest.raises(PageError, match="not JSON"):
        extract_json(paths, body, API_URL, FETCHED_AT)


@pytest.mark.parametrize("answer", [[], {}, 3, "text", {"data": None}])
def test_an_answer_of_another_shape_has_no_items(answer: Any) -> None:
    assert list(extracted(QUERY, answer).items) == []


@pytest.mark.parametrize("path", ["$.[", "$..[?(@.x ==", ""])
def test_a_bad_jsonpath_is_refused(path: str) -> None:
    with pytest.raises(JsonPathError, match="not a valid JSONPath"):
        compiled(path)
