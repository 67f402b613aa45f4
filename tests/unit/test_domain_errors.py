"""The domain's errors: a refusal told within a larger input, in other terms, or from a
schema's error map, keeps its kind."""

from __future__ import annotations

import pytest

from blackwidow.core.domain_errors import Conflict, Forbidden, Invalid, NotFound, part_of


@pytest.mark.parametrize(
    ("message", "field", "expected"),
    [
        (
            "query.feeds.0: Not a valid URL.",
            "query.feeds.0",
            ("crawlers.3.query.feeds.0: Not a valid URL.", "crawlers.3.query.feeds.0"),
        ),
        (
            "source: unknown source",
            "source",
            ("crawlers.3.source: unknown source", "crawlers.3.source"),
        ),
        # a message that does not start with its field is placed, not renamed
        ("no crawler 7", "id", ("crawlers.3: no crawler 7", "crawlers.3.id")),
        ("something is wrong", None, ("crawlers.3: something is wrong", "crawlers.3")),
    ],
)
def test_part_of_names_the_part_in_message_and_field(message, field, expected):
    assert part_of("crawlers.3", message, field) == expected


@pytest.mark.parametrize("kind", [Invalid, Forbidden, NotFound, Conflict])
def test_a_refusal_within_a_larger_input_keeps_its_kind(kind):
    error = kind("query.feeds.0: Not a valid URL.", "query.feeds.0").within("crawlers.3")
    assert type(error) is kind and error.code == kind.code
    assert (error.field, error.message) == (
        "crawlers.3.query.feeds.0",
        "crawlers.3.query.feeds.0: Not a valid URL.",
    )


def test_a_reworded_refusal_keeps_its_kind():
    error = NotFound("no crawler 7", "id").reworded(
        "body.outline[2]: no crawler 7", "body.outline[2]"
    )
    assert type(error) is NotFound
    assert (error.message, error.field) == ("body.outline[2]: no crawler 7", "body.outline[2]")


@pytest.mark.parametrize(
    ("messages", "prefix", "field", "message"),
    [
        (
            {"feeds": {0: ["Not a valid URL."]}},
            "query",
            "query.feeds.0",
            "query.feeds.0: Not a valid URL.",
        ),
        (
            {"name": ["Missing data for required field."]},
            None,
            "name",
            "name: Missing data for required field.",
        ),
        ({"_schema": ["Invalid input."]}, None, None, "Invalid input."),
        ({"_schema": ["Unknown field."]}, "query", "query", "query: Unknown field."),
    ],
)
def test_invalid_from_a_schemas_error_map_names_its_first_bad_field(
    messages, prefix, field, message
):
    error = Invalid.from_messages(messages, prefix)
    assert (error.code, error.field, error.message) == ("invalid", field, message)
