"""The dashboard's crawler forms as the bodies of `POST /api/v1/crawlers` and `PATCH
/api/v1/crawlers/<id>`: text fields turned into JSON values, then the API's own schemas decide
what is valid. A refused form is told every error at once, each under the form field it is
about, and a bad feed by its line (`feeds, line 3 (ftp://x/y): Not a valid URL.`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from marshmallow import Schema

from blackwidow.api.schemas import CrawlerCreate, CrawlerUpdate
from blackwidow.core.domain_errors import Invalid
from blackwidow.core.errors import STATUS_OF
from sources.registry import SOURCE_TYPES

_WHOLE_NUMBER = re.compile(r"-?\d{1,18}")
_FEED_SEPARATORS = re.compile(r"\s+")  # a URL holds no white space
_KEYWORD_SEPARATORS = re.compile(r"[,\n]")  # a keyword may hold a space: "machine learning"
_FEED_FIELD = re.compile(r"^query\.feeds\.(\d+)$")
# an API field, as an error names it, to the form field that holds it
_FORM_FIELDS = {"query.feeds": "feeds", "query.keywords": "keywords"}
_RSS_QUERY = SOURCE_TYPES["rss"].query_schema()


class FormErrors(Exception):
    """Every refusal of a form at once: form field -> its messages (None: about no field);
    `message` is all of them, for a page that shows one line. Answered as an Invalid is."""

    status = STATUS_OF[Invalid]

    def __init__(self, by_field: dict[str | None, list[str]]) -> None:
        self.message = "; ".join(message for said in by_field.values() for message in said)
        super().__init__(self.message)
        self.by_field = by_field


def crawler_edits(form: Mapping[str, str]) -> dict[str, Any]:
    """The edits a crawler form asks for, validated as a PATCH body is: a blank limit means
    none (null), digits a number; anything else stays text, which the schema refuses naming
    the field (`item_limit: Not a valid integer.`). Nothing is written before this passes."""
    body: dict[str, Any] = {}
    if "enabled" in form:
        body["enabled"] = form["enabled"]  # "true" / "false", as marshmallow reads booleans
    if "item_limit" in form:
        body["item_limit"] = _limit(form["item_limit"])
    return _loaded(CrawlerUpdate(), body, {})


def crawler_create(form: Mapping[str, str]) -> dict[str, Any]:
    """The RSS crawler a new-crawler form asks for, as a create body the API's schema has
    validated, its query checked by the RSS query's schema as `crawlers.create` checks it:
    feeds one a line (or split by spaces), keywords one a line or split by commas."""
    feeds = list(_feed_lines(form.get("feeds", "")))
    body = {
        "name": form.get("name", "").strip(),
        "source": "rss",
        "query": {
            "feeds": [url for _, url in feeds],
            "keywords": _split(_KEYWORD_SEPARATORS, form.get("keywords", "")),
        },
        "item_limit": _limit(form.get("item_limit", "")),
    }
    query_errors = _RSS_QUERY.validate(body["query"])
    return _loaded(CrawlerCreate(), body, {"query": query_errors} if query_errors else {}, feeds)


def form_field(api_field: str | None) -> str | None:
    """The form field to mark for an API error's field (`query.feeds.0` is `feeds`)."""
    for prefix, name in _FORM_FIELDS.items():
        if api_field and api_field.startswith(prefix):
            return name
    return api_field


def _loaded(
    schema: Schema,
    body: dict[str, Any],
    more: dict[str, Any],
    feeds: list[tuple[int, str]] | None = None,
) -> dict[str, Any]:
    """`body` loaded by `schema`, or FormErrors with every error of the schema and `more`
    (a nested schema's), a feed's told by its line."""
    messages = {**schema.validate(body), **more}
    if not messages:
        return schema.load(body)
    by_field: dict[str | None, list[str]] = {}
    for field, message in _leaves(messages):
        feed = _FEED_FIELD.match(field or "")
        if feed is not None and feeds and int(feed[1]) < len(feeds):
            line, url = feeds[int(feed[1])]
            message = f"line {line} ({url}): {message}"
        elif field:
            message = f"{field}: {message}"
        by_field.setdefault(form_field(field), []).append(message)
    raise FormErrors(by_field)


def _leaves(messages: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str | None, str]]:
    """Every (dotted field, message) of a schema's nested error map, in its order:
    `{"query": {"feeds": {2: ["Not a valid URL."]}}}` gives `("query.feeds.2", ...)`."""
    if isinstance(messages, Mapping):
        for key, value in messages.items():
            yield from _leaves(value, path if key == "_schema" else (*path, str(key)))
    elif isinstance(messages, list | tuple):
        for message in messages:
            yield from _leaves(message, path)
    else:
        yield ".".join(path) or None, str(messages)


def _feed_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number from 1, URL) of each feed typed, a line holding one or more."""
    for number, line in enumerate(text.splitlines(), 1):
        for url in _split(_FEED_SEPARATORS, line):
            yield number, url


def _split(separators: re.Pattern[str], text: str) -> list[str]:
    return [part.strip() for part in separators.split(text) if part.strip()]


def _limit(text: str) -> int | str | None:
    """A blank limit is none (null); digits a number; anything else stays text, for the
    schema to refuse naming the field."""
    text = text.strip()
    if text == "":
        return None
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else text
