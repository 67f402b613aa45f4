"""JSON API answers read by configured JSONPaths: the items, their fields and the next page.

Pure. Paths are JSONPath (jsonpath-ng's extended syntax: filters, `..`), compiled once. The
next page is asked for with a query parameter: the cursor the answer names, or the page
number after this one (while a page still has records).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JSONPathError
from jsonpath_ng.ext import parse

from sources.records import Page, PageError, item_from_record

SOURCE = "json"


class JsonPathError(ValueError):
    """A path that is not valid JSONPath; str() says why."""


def compiled(path: str) -> JSONPath:
    try:
        return parse(path)
    except (JSONPathError, ValueError, TypeError, AttributeError) as error:
        raise JsonPathError(f"not a valid JSONPath ({error})") from None


@dataclass(frozen=True)
class JsonPaths:
    """A json query's paths and pagination, compiled once per data source."""

    items: JSONPath
    fields: Mapping[str, JSONPath]
    cursor: JSONPath | None  # where the next cursor is, in cursor pagination
    param: str | None  # the query parameter that carries the cursor or the page number
    start: int  # the first page's number, in page-number pagination

    @classmethod
    def of(cls, query: Mapping[str, Any]) -> JsonPaths:
        pagination = query.get("pagination") or {}
        cursor = pagination.get("cursor")
        return cls(
            items=compiled(query["items"]),
            fields={name: compiled(path) for name, path in query["fields"].items()},
            cursor=compiled(cursor) if cursor else None,
            param=pagination.get("param"),
            start=pagination.get("start", 1),
        )

    def first_url(self, url: str) -> str:
        """Page-number pagination asks for its first page by number too."""
        if self.param is None or self.cursor is not None:
            return url
        return with_param(url, self.param, str(self.start))


def with_param(url: str, name: str, value: str) -> str:
    """`url` with its query parameter `name` set to `value` (the others kept, in order)."""
    parts = urlsplit(url)
    pairs = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != name]
    return urlunsplit(parts._replace(query=urlencode([*pairs, (name, value)])))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)  # an object or a list


def _first(path: JSONPath, data: Any) -> Any:
    found = path.find(data)
    return found[0].value if found else None


def _records(paths: JsonPaths, data: Any) -> list[Any]:
    """The matches of the items path; a path to the list itself (`$.data`) means its elements."""
    found = [match.value for match in paths.items.find(data)]
    if len(found) == 1 and isinstance(found[0], list):
        found = found[0]
    return [record for record in found if isinstance(record, dict)]


def _next_url(paths: JsonPaths, data: Any, url: str, had_records: bool) -> str | None:
    if paths.param is None:
        return None
    if paths.cursor is not None:
        cursor = _text(_first(paths.cursor, data))
        return with_param(url, paths.param, cursor) if cursor else None
    if not had_records:
        return None  # past the last page
    current = dict(parse_qsl(urlsplit(url).query)).get(paths.param, "")
    number = int(current) if current.lstrip("-").isdigit() else paths.start
    return with_param(url, paths.param, str(number + 1))


def extract_json(paths: JsonPaths, body: bytes, url: str, fetched_at: datetime) -> Page:
    """The items of one JSON answer, in order, and the next page's URL."""
    try:
        data = json.loads(body)
    except ValueError as error:  # UnicodeDecodeError is one too
        raise PageError(f"not JSON ({type(error).__name__})") from None
    records = _records(paths, data)
    items = []
    for record in records:
        fields = {name: _text(_first(path, record)) for name, path in paths.fields.items()}
        item = item_from_record(SOURCE, fields, url, fetched_at)
        if item is not None:
            items.append(item)
    return Page(items, _next_url(paths, data, url, bool(records)))
