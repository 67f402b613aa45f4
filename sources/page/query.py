"""What a page crawler asks for: an HTML listing, the paths of its items and fields, its next link.

Every path is compiled when the query is loaded, so a bad one is refused by name
(`query.fields.title`) before any crawler exists.
"""

from __future__ import annotations

from typing import Any

from marshmallow import fields, validate, validates_schema

from sources.page.extract import PagePathError, compiled
from sources.paged_query import FieldPaths, PagedQuery, path_field, paths_checked


class PageQuery(PagedQuery):
    selector = fields.String(load_default="xpath", validate=validate.OneOf(["xpath", "css"]))
    items = path_field(required=True, metadata={"description": "the path of one item"})
    next = path_field(load_default=None, metadata={"description": "the next page's link"})
    fields = fields.Nested(FieldPaths, required=True)  # last: the name hides marshmallow's

    @validates_schema(skip_on_field_errors=True)
    def _paths_compile(self, data: dict[str, Any], **_: Any) -> None:
        paths_checked(data, ("items", "next"), lambda path: _refusal(path, data["selector"]))


def _refusal(path: str, selector: str) -> str | None:
    try:
        compiled(path, selector)
    except PagePathError as error:
        return str(error)
    return None
