"""Paid-stream lines: one JSON object with an id per line, anything else a BadLine."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from sources.datasift.source import BadLine, bounded_lines, parse_line

FETCHED_AT = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)


def line(**data) -> bytes:
    return json.dumps(data).encode()


def test_a_full_object():
    item = parse_line(
        line(
            id="abc-1",
            url="https://example.com/post/1",
            title="A title",
            text="python everywhere",
            author="ana",
            created_at="2024-05-01T12:00:00Z",
            conversation_id="abc-0",
            in_reply_to="abc-0",
            extra={"ignored": True},
        ),
        FETCHED_AT,
    )

    assert item.id == "abc-1"
    assert item.source == "datasift"
    assert item.url == "https://example.com/post/1"
    assert item.title == "A title"
    assert item.text == "python everywhere"
    assert item.author == "ana"
    assert item.published_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert item.fetched_at == FETCHED_AT
    assert item.conversation_id == "abc-0"
    assert item.in_reply_to == "abc-0"
    assert item.crawler_id is None


def test_an_object_with_only_an_id():
    item = parse_line(b'{"id": "x"}', FETCHED_AT)

    assert item.id == "x"
    assert item.fetched_at == FETCHED_AT
    fields = (item.url, item.title, item.text, item.author, item.published_at)
    assert fields == (None,) * 5
    assert (item.conversation_id, item.in_reply_to) == (None, None)


def test_a_numeric_id_becomes_text():
    assert parse_line(b'{"id": 1234567890123456789}', FETCHED_AT).id == "1234567890123456789"


@pytest.mark.parametrize(
    "value", [123, 1.5, True, None, ["a"], {"text": "nested"}], ids=lambda v: type(v).__name__
)
def test_fields_that_are_not_text_become_none(value):
    item = parse_line(
        line(id="x", url=value, title=value, text=value, author=value, conversation_id=value),
        FETCHED_AT,
    )
    assert (item.url, item.title, item.text, item.author, item.conversation_id) == (None,) * 5


def test_a_non_text_in_reply_to_becomes_none():
    assert parse_line(line(id="x", in_reply_to=42), FETCHED_AT).in_reply_to is None


@pytest.mark.parametrize(
    ("created_at", "expected"),
    [
        ("2024-05-01T12:00:00Z", datetime(2024, 5, 1, 12, 0, tzinfo=UTC)),
        ("2024-05-01T12:00:00", datetime(2024, 5, 1, 12, 0, tzinfo=UTC)),  # naive is UTC
        ("2024-05-01T12:00:00.250Z", datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)),
        ("2024-05-01T14:00:00+02:00", datetime(2024, 5, 1, 12, 0, tzinfo=UTC)),
    ],
)
def test_created_at_is_an_aware_instant(created_at, expected):
    published_at = parse_line(line(id="x", created_at=created_at), FETCHED_AT).published_at

    assert published_at == expected
    assert published_at.tzinfo is not None


def test_a_naive_created_at_is_taken_as_utc_not_local_time():
    item = parse_line(line(id="x", created_at="2024-05-01T12:00:00"), FETCHED_AT)
    assert item.published_at.utcoffset() == timedelta(0)


def test_an_offset_is_kept():
    item = parse_line(line(id="x", created_at="2024-05-01T14:00:00+02:00"), FETCHED_AT)
    assert item.published_at.utcoffset() == timedelta(hours=2)


@pytest.mark.parametrize("created_at", ["yesterday", "", 1714564800, None, ["2024-05-01"]])
def test_an_unreadable_created_at_is_no_time(created_at):
    assert parse_line(line(id="x", created_at=created_at), FETCHED_AT).published_at is None


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b'{"id": "x"', id="truncated"),
        pytest.param(b"\xff\xfe{}", id="not-utf8"),
        pytest.param(b"", id="empty"),
        pytest.param(b'["x"]', id="array"),
        pytest.param(b'"x"', id="string"),
        pytest.param(b"42", id="number"),
        pytest.param(b"null", id="null"),
        pytest.param(b'{"text": "no id"}', id="missing-id"),
        pytest.param(b'{"id": null}', id="null-id"),
        pytest.param(b'{"id": 1.5}', id="float-id"),
        pytest.param(b'{"id": ["x"]}', id="list-id"),
        pytest.param(b'{"id": {"x": 1}}', id="object-id"),
        pytest.param(b'{"id": true}', id="boolean-id"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deeply-nested-array"),
        pytest.param(b'{"a":' * 100_000 + b"1" + b"}" * 100_000, id="deeply-nested-object"),
    ],
)
def test_a_line_that_is_not_an_item_is_a_bad_line(raw):
    with pytest.raises(BadLine):
        parse_line(raw, FETCHED_AT)


def test_bad_line_is_a_value_error():
    assert issubclass(BadLine, ValueError)


# -- lines out of a stream's chunks ------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunks", "lines"),
    [
        ([b"a\nbc\n"], [b"a", b"bc"]),
        ([b"a", b"b\r\n", b"\n"], [b"ab", b""]),  # split anywhere; a keep-alive
        ([b"a\nb"], [b"a", b"b"]),  # a last line without its end
        ([b"12345\n"], [b"12345"]),  # exactly at the limit
        ([b"123456\nok\n"], [None, b"ok"]),  # over it, in one chunk
        ([b"1234", b"56", b"789", b"\nok\n"], [None, b"ok"]),  # over it across chunks
        ([b"123456789", b"0123456789", b"0123"], [None]),  # never ends: nothing held
    ],
)
def test_bounded_lines_skip_what_is_too_long_without_holding_it(chunks, lines):
    assert list(bounded_lines(chunks, limit=5)) == lines


def test_a_line_without_end_holds_no_more_than_the_limit():
    endless = (b"x" * 1000 for _ in range(10_000))  # 10 MB, one line
    assert list(bounded_lines(endless, limit=4096)) == [None]
