"""One error type crosses HTTP, for hub and node alike: {"error": {code, message, field}}; the
domain's refusals (blackwidow.core.domain_errors) are mapped to it here, and only here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask, jsonify
from flask.typing import ResponseReturnValue
from flask_smorest import Api
from marshmallow import Schema, fields
from werkzeug.exceptions import HTTPException

from blackwidow.core.domain_errors import (
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    NotFound,
    first_invalid_field,
)
from blackwidow.core.openapi import OperationNames, Security, open_to_all


class ApiError(Exception):
    """An error the caller can act on; `field` names the input to fix, when there is one, and
    `retry_after` (seconds, sent as the Retry-After header) when to ask again."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after


# The one mapping of the domain's refusals to HTTP: each keeps its code, message and field.
STATUS_OF: dict[type[DomainError], int] = {
    Invalid: 422,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
}


def as_api_error(error: DomainError | ApiError) -> ApiError:
    """The HTTP error a refusal is answered with, in a handler or out of one (a dashboard
    form's message and status); an ApiError is one already."""
    if isinstance(error, ApiError):
        return error
    return ApiError(STATUS_OF[type(error)], error.code, error.message, error.field)


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "field": field}}


_REQUEST_LOCATIONS = ("json", "query", "querystring", "form", "headers", "view_args")


def invalid_input(messages: Any, prefix: str | None = None) -> ApiError:
    """A 422 for a schema's error map, for an edge that answers each entry of a batch with
    its ApiError (the node's); `prefix` places a nested schema (e.g. "query")."""
    return as_api_error(Invalid.from_messages(messages, prefix))


def http_error_response(error: HTTPException) -> ResponseReturnValue:
    """Render any HTTPException (404, 405, 413, schema validation) in the one error shape."""
    data = getattr(error, "data", None) or {}
    messages = data.get("messages") or data.get("errors")
    status = error.code or 500
    if messages:
        # webargs files errors under the request location: {"json": {"name": [...]}}
        location = next(iter(messages)) if isinstance(messages, Mapping) else None
        if location in _REQUEST_LOCATIONS and len(messages) == 1:
            messages = messages[location]
        field, message = first_invalid_field(messages)
        body = error_body("invalid", f"{field}: {message}" if field else message, field)
        return jsonify(body), status
    code = (error.name or "error").lower().replace(" ", "_")
    return jsonify(error_body(code, error.description or error.name or "error")), status


def api_error_response(error: ApiError | DomainError) -> ResponseReturnValue:
    """The one error shape for an ApiError, or for a domain error by `as_api_error`."""
    error = as_api_error(error)
    headers = {} if error.retry_after is None else {"Retry-After": str(error.retry_after)}
    return jsonify(error_body(error.code, error.message, error.field)), error.status, headers


class ErrorDetail(Schema):
    code = fields.String()
    message = fields.String()
    field = fields.String(allow_none=True)


class ErrorOut(Schema):
    error = fields.Nested(ErrorDetail)


class ErrorShapedApi(Api):
    """flask-smorest's Api, answering and describing its errors in the one error shape."""

    ERROR_SCHEMA = ErrorOut

    def handle_http_exception(self, error: HTTPException):  # type: ignore[no-untyped-def]
        return http_error_response(error)


def described_api(
    app: Flask,
    title: str,
    url_prefix: str,
    max_request_bytes: int,
    security: Security = open_to_all,
) -> ErrorShapedApi:
    """flask-smorest on `app`, describing it as OpenAPI 3 at `<url_prefix>/openapi.json`; the
    hub and the node each describe their API this way. Every operation gets an operationId
    from its endpoint, and the bearer scheme `security` names for it (blackwidow.core.openapi)."""
    app.config.update(
        MAX_CONTENT_LENGTH=max_request_bytes,
        API_TITLE=title,
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX=url_prefix,
        OPENAPI_JSON_PATH="openapi.json",
    )
    return ErrorShapedApi(app, spec_kwargs={"extra_plugins": [OperationNames(security)]})


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(ApiError, api_error_response)
    app.register_error_handler(DomainError, api_error_response)
    app.register_error_handler(HTTPException, http_error_response)
