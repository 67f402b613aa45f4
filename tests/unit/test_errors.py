"""The one HTTP error shape: first invalid field of a nested error map; HTTPException bodies;
the one mapping of the domain's errors to HTTP."""

from __future__ import annotations

import pytest
from flask import Flask
from werkzeug.exceptions import (
    BadRequest,
    HTTPException,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
    UnprocessableEntity,
)

from blackwidow.core import domain_errors as domain
from blackwidow.core.errors import (
    STATUS_OF,
    ApiError,
    api_error_response,
    as_api_error,
    first_invalid_field,
    http_error_response,
    invalid_input,
    register_error_handlers,
)


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            {"name": ["Missing data for required field."]},
            ("name", "Missing data for required field."),
        ),
        (
            {"query": {"feeds": {0: ["Not a valid URL."]}}},
            ("query.feeds.0", "Not a valid URL."),
        ),
        (
            {"query": {"feeds": {3: ["Not a valid URL.", "Too long."]}}},
            ("query.feeds.3", "Not a valid URL."),
        ),
        ({"a": {"b": {"c": "deep"}}}, ("a.b.c", "deep")),
        # the first entry wins
        ({"name": ["bad name"], "item_limit": ["bad limit"]}, ("name", "bad name")),
        # lists: the first message
        (["first", "second"], (None, "first")),
        ([["nested first"], "second"], (None, "nested first")),
        ({"keywords": [["x"], ["y"]]}, ("keywords", "x")),
        # _schema errors belong to the object itself, not to a field named "_schema"
        ({"_schema": ["Invalid input."]}, (None, "Invalid input.")),
        ({"query": {"_schema": ["Unknown source."]}}, ("query", "Unknown source.")),
        # empty maps and lists end the path where they are
        ({}, (None, "{}")),
        ({"query": {}}, ("query", "{}")),
        ([], (None, "[]")),
        ("plain message", (None, "plain message")),
    ],
)
def test_first_invalid_field(messages, expected):
    assert first_invalid_field(messages) == expected


def with_data(error: HTTPException, data: dict) -> HTTPException:
    error.data = data  # what webargs / flask-smorest attach to the 422 they abort with
    return error


@pytest.mark.parametrize(
    ("error", "status", "expected"),
    [
        (
            with_data(
                UnprocessableEntity(),
                {"messages": {"json": {"name": ["Missing data for required field."]}}},
            ),
            422,
            {
                "code": "invalid",
                "field": "name",
                "message": "name: Missing data for required field.",
            },
        ),
        (
            with_data(
                UnprocessableEntity(),
                {"messages": {"json": {"query": {"feeds": {0: ["Not a valid URL."]}}}}},
            ),
            422,
            {
                "code": "invalid",
                "field": "query.feeds.0",
                "message": "query.feeds.0: Not a valid URL.",
            },
        ),
        (
            with_data(
                UnprocessableEntity(), {"errors": {"query": {"page": ["Not a valid integer."]}}}
            ),
            422,
            {"code": "invalid", "field": "page", "message": "page: Not a valid integer."},
        ),
        (
            # two locations: the location stays in the path, so the caller knows which one
            with_data(
                BadRequest(),
                {"messages": {"json": {"name": ["Missing."]}, "query": {"page": ["Bad."]}}},
            ),
            400,
            {"code": "invalid", "field": "json.name", "message": "json.name: Missing."},
        ),
        (
            with_data(
                UnprocessableEntity(), {"messages": {"json": {"_schema": ["Invalid input."]}}}
            ),
            422,
            {"code": "invalid", "field": None, "message": "Invalid input."},
        ),
        (
            NotFound(),
            404,
            {"code": "not_found", "field": None, "message": NotFound.description},
        ),
        (
            NotFound("no crawler 7"),
            404,
            {"code": "not_found", "field": None, "message": "no crawler 7"},
        ),
        (
            MethodNotAllowed(),
            405,
            {"code": "method_not_allowed", "field": None, "message": MethodNotAllowed.description},
        ),
        (
            RequestEntityTooLarge(),
            413,
            {
                "code": "request_entity_too_large",
                "field": None,
                "message": RequestEntityTooLarge.description,
            },
        ),
        (
            with_data(BadRequest("bad body"), {}),  # data without messages: the plain shape
            400,
            {"code": "bad_request", "field": None, "message": "bad body"},
        ),
    ],
)
def test_http_error_response(error, status, expected):
    app = Flask(__name__)
    with app.test_request_context():
        response, returned_status = http_error_response(error)
    assert returned_status == status
    assert response.mimetype == "application/json"
    assert response.get_json() == {"error": expected}


@pytest.mark.parametrize(("retry_after", "header"), [(None, None), (1, "1"), (30, "30")])
def test_api_error_response_says_when_to_ask_again(retry_after, header):
    app = Flask(__name__)
    error = ApiError(503, "busy", "the database is busy", retry_after=retry_after)
    with app.test_request_context():
        response, status, headers = api_error_response(error)
    assert status == 503 and headers.get("Retry-After") == header
    assert response.get_json() == {
        "error": {"code": "busy", "message": "the database is busy", "field": None}
    }


@pytest.mark.parametrize(
    ("field", "message", "expected_field", "expected_message"),
    [
        ("query.feeds.0", "query.feeds.0: Not a valid URL.", "crawlers.3.query.feeds.0", None),
        ("source", "source: unknown source", "crawlers.3.source", None),
        (None, "something is wrong", "crawlers.3", "crawlers.3: something is wrong"),
    ],
)
def test_an_error_within_a_larger_input_names_the_part(
    field, message, expected_field, expected_message
):
    error = as_api_error(domain.Invalid(message, field).within("crawlers.3"))
    assert (error.status, error.code, error.field) == (422, "invalid", expected_field)
    assert error.message == (expected_message or f"crawlers.3.{message}")


# the status each domain error was answered with before the domain had its own errors
STATUS_BEFORE = [
    (domain.Invalid, 422, "invalid"),
    (domain.Forbidden, 403, "forbidden"),
    (domain.NotFound, 404, "not_found"),
    (domain.Conflict, 409, "conflict"),
]


def test_every_domain_error_has_a_status():
    assert set(STATUS_OF) == set(domain.DomainError.__subclasses__())
    assert {kind for kind, _, _ in STATUS_BEFORE} == set(STATUS_OF)


@pytest.mark.parametrize(("kind", "status", "code"), STATUS_BEFORE)
def test_a_domain_error_maps_to_the_status_and_shape_the_api_answered(kind, status, code):
    error = as_api_error(kind("name: already taken", "name"))
    assert (error.status, error.code, error.message, error.field) == (
        status,
        code,
        "name: already taken",
        "name",
    )
    assert error.retry_after is None


def test_an_api_error_maps_to_itself():
    error = ApiError(503, "busy", "the database is busy", retry_after=1)
    assert as_api_error(error) is error


@pytest.mark.parametrize(("kind", "status", "code"), STATUS_BEFORE)
def test_an_app_answers_a_domain_error_in_the_one_shape(kind, status, code):
    app = Flask(__name__)
    register_error_handlers(app)

    @app.route("/refused")
    def refused():
        raise kind("no crawler 7", "id")

    response = app.test_client().get("/refused")
    assert response.status_code == status and "Retry-After" not in response.headers
    assert response.get_json() == {
        "error": {"code": code, "message": "no crawler 7", "field": "id"}
    }


def test_invalid_input_is_the_422_of_a_schemas_error_map():
    error = invalid_input({"feeds": {0: ["Not a valid URL."]}}, "query")
    assert (error.status, error.code, error.field) == (422, "invalid", "query.feeds.0")
    assert error.message == "query.feeds.0: Not a valid URL."
