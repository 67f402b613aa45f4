"""What a json crawler asks for: a JSON API, the JSONPaths of its items and fields, its paging.

Every path is compiled when the query is loaded, so a bad one is refused by name
(`query.items`, `query.fields.title`, `query.pagination.cursor`) before any crawler exists.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from sources.jsonapi.extract import JsonPathError, compiled
from sources.paged_query import FieldPaths, PagedQuery, path_field, paths_checked


def _refusal(path: str) -> str | None:
    try:
        compiled(path)
    except JsonPathError as error:
        return str(error)
    return None


class Pagination(Schema):
    by = fields.String(required=True, validate=validate.OneOf(["cursor", "page"]))
    param = fields.String(
        required=True,
        validate=validate.Regexp(r"^[A-Za-z0-9_.\[\]-]{1,64}\Z", error="a query parameter name"),
        metadata={"description": "the query parameter that carries the cursor or page number"},
    )
    cursor = path_field(metadata={"description": "by cursor: where the answer names the next"})
    start = fields.Integer(
        strict=True, load_default=1, validate=validate.Range(min=0, max=1_000_000)
    )

    @validates_schema(skip_on_field_errors=True)
    def _cursor_for_cursors(self, data: dict[str, Any], **_: Any) -> None:
        cursor = data.get("cursor")
        if data["by"] == "cursor" and cursor is None:
            raise ValidationError("a JSONPath to the next cursor is needed", "cursor")
        if data["by"] == "page" and cursor is not None:
            raise ValidationError("only paging by cursor reads a cursor", "cursor")
        if cursor is not None and (reason := _refusal(cursor)):
            raise ValidationError(reason, "cursor")


class JsonQuery(PagedQuery):
    items = path_field(required=True, metadata={"description": "the JSONPath of the item list"})
    pagination = fields.Nested(Pagination, load_default=None)
    fields = fields.Nested(FieldPaths, required=True)  # last: the name hides marshmallow's

    @validates_schema(skip_on_field_errors=True)
    def _paths_compile(self, data: dict[str, Any], **_: Any) -> None:
        paths_checked(data, ("items",), _refusal)
