"""What a paid-stream ("datasift") crawler asks for, and the credential it connects with.

The provider streams JSON lines for a query and bills every item it delivers, so equal
queries on one credential share one connection: the key is the credential and the query.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from sources.credentials import credential_field
from sources.urls import fetchable

_HEADER_NAME = validate.Regexp(r"^[A-Za-z0-9-]{1,64}\Z", error="an HTTP header name")


def _no_control_characters(text: str) -> None:
    if any(ord(c) < 32 for c in text):
        raise ValidationError("must not contain control characters")


class DatasiftQuery(Schema):
    query = fields.String(
        required=True,
        validate=[validate.Length(min=1, max=4096), _no_control_characters],
        metadata={"description": "the provider's query language, passed through as is"},
    )
    credential = credential_field()


def datasift_fetch_target(query: dict[str, Any]) -> dict[str, Any]:
    return {"credential": query["credential"], "query": query["query"]}


class DatasiftCredential(Schema):
    endpoint = fields.Url(
        required=True, schemes={"http", "https"}, require_tld=False, validate=fetchable
    )
    auth_header = fields.String(load_default="Authorization", validate=_HEADER_NAME)
    auth_value = fields.String(
        required=True, validate=[validate.Length(min=1, max=4096), _no_control_characters]
    )
    query_param = fields.String(
        load_default="q", validate=validate.Regexp(r"^[A-Za-z0-9_.-]{1,64}\Z")
    )
