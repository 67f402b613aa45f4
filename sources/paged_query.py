"""What every configured listing crawler (page, json) asks for besides its paths; its source key.

The start URL, how many pages one poll may read and how long to wait between them, and
keywords, which filter per subscriber. Everything but the keywords decides the data source:
equal configurations share one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from sources.urls import canonical_url, fetchable

DEFAULT_PAGE_LIMIT = 3
MAX_PAGE_LIMIT = 20  # pages one poll reads at most
DEFAULT_PAGE_INTERVAL = 1.0  # seconds between two pages of one poll (politeness)
MAX_PAGE_INTERVAL = 60.0
MAX_PATH_CHARS = 1000


class PagedQuery(Schema):
    """The parts shared by the page and json queries; each adds its own paths."""

    url = fields.Url(
        required=True, schemes={"http", "https"}, require_tld=False, validate=fetchable
    )
    page_limit = fields.Integer(
        strict=True,
        load_default=DEFAULT_PAGE_LIMIT,
        validate=validate.Range(min=1, max=MAX_PAGE_LIMIT),
    )
    page_interval = fields.Float(
        load_default=DEFAULT_PAGE_INTERVAL,
        allow_nan=False,
        validate=validate.Range(min=0, max=MAX_PAGE_INTERVAL),
    )
    keywords = fields.List(
        fields.String(validate=validate.Length(min=1, max=200)),
        load_default=list,
        validate=validate.Length(max=100),
    )


def path_field(**kwargs: Any) -> fields.String:
    """An XPath, CSS selector or JSONPath as written (checked by its query's own schema)."""
    return fields.String(validate=validate.Length(min=1, max=MAX_PATH_CHARS), **kwargs)


class FieldPaths(Schema):
    """The `fields` map: one optional path per item field (sources.records.FIELDS)."""

    title = path_field()
    url = path_field()
    text = path_field()
    author = path_field()
    published_at = path_field()
    id = path_field()

    @validates_schema
    def _identified(self, data: dict[str, Any], **_: Any) -> None:
        if "url" not in data and "id" not in data:
            raise ValidationError("a url or an id path is needed to identify items", "url")


def paths_checked(
    data: dict[str, Any], names: tuple[str, ...], check: Callable[[str], str | None]
) -> None:
    """Raise a ValidationError naming the first path that `check` refuses (with its reason):
    `items`, `fields.title`, `next`...; `names` are the query's top-level paths."""
    for name in names:
        if data.get(name) is not None and (reason := check(data[name])):
            raise ValidationError(reason, name)
    for name, path in data["fields"].items():
        if reason := check(path):
            raise ValidationError({name: [reason]}, "fields")


def paged_fetch_target(query: dict[str, Any]) -> dict[str, Any]:
    """The whole configuration but the keywords, its URL canonical: equal ones share a source."""
    target = {name: value for name, value in query.items() if name != "keywords"}
    return {**target, "url": canonical_url(query["url"])}
