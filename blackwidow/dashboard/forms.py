"""The dashboard's crawler forms as the bodies of `POST /api/v1/crawlers` and `PATCH
/api/v1/crawlers/<id>`: text fields turned into JSON values, then the API's own schemas decide
what is valid."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from blackwidow.api.schemas import CrawlerCreate, CrawlerUpdate, validated

_WHOLE_NUMBER = re.compile(r"-?\d{1,18}")
_FEED_SEPARATORS = re.compile(r"\s+")  # a URL holds no white space
_KEYWORD_SEPARATORS = re.compile(r"[,\n]")  # a keyword may hold a space: "machine learning"
# an API field, as an error names it, to the form field that holds it
_FORM_FIELDS = {"query.feeds": "feeds", "query.keywords": "keywords"}


def crawler_edits(form: Mapping[str, str]) -> dict[str, Any]:
    """The edits a crawler form asks for, validated as a PATCH body is: a blank limit means
    none (null), digits a number; anything else stays text, which the schema refuses naming
    the field (`item_limit: Not a valid integer.`). Nothing is written before this passes."""
    body: dict[str, Any] = {}
    if "enabled" in form:
        body["enabled"] = form["enabled"]  # "true" / "false", as marshmallow reads booleans
    if "item_limit" in form:
        body["item_limit"] = _limit(form["item_limit"])
    return validated(CrawlerUpdate(), body)


def crawler_create(form: Mapping[str, str]) -> dict[str, Any]:
    """The RSS crawler a new-crawler form asks for, as a create body the API's schema has
    validated: feeds one a line (or split by spaces), keywords one a line or split by commas.
    The query itself is checked by `crawlers.create`, as for the API (`query.feeds.0: ...`)."""
    body = {
        "name": form.get("name", "").strip(),
        "source": "rss",
        "query": {
            "feeds": _split(_FEED_SEPARATORS, form.get("feeds", "")),
            "keywords": _split(_KEYWORD_SEPARATORS, form.get("keywords", "")),
        },
        "item_limit": _limit(form.get("item_limit", "")),
    }
    return validated(CrawlerCreate(), body)


def form_field(api_field: str | None) -> str | None:
    """The form field to mark for an API error's field (`query.feeds.0` is `feeds`)."""
    for prefix, name in _FORM_FIELDS.items():
        if api_field and api_field.startswith(prefix):
            return name
    return api_field


def _split(separators: re.Pattern[str], text: str) -> list[str]:
    return [part.strip() for part in separators.split(text) if part.strip()]


def _limit(text: str) -> int | str | None:
    """A blank limit is none (null); digits a number; anything else stays text, for the
    schema to refuse naming the field."""
    text = text.strip()
    if text == "":
        return None
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else text
