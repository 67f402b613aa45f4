"""The dashboard's crawler forms as the body of `PATCH /api/v1/crawlers/<id>`: text fields
turned into JSON values, then the API's own schema decides what is valid."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from blackwidow.api.schemas import CrawlerUpdate, validated

EDITABLE = ("enabled", "item_limit")  # what the dashboard's forms change
_WHOLE_NUMBER = re.compile(r"-?\d{1,18}")


def crawler_edits(form: Mapping[str, str]) -> dict[str, Any]:
    """The edits a crawler form asks for, validated as a PATCH body is: a blank limit means
    none (null), digits a number; anything else stays text, which the schema refuses naming
    the field (`item_limit: Not a valid integer.`). Nothing is written before this passes."""
    body: dict[str, Any] = {}
    if "enabled" in form:
        body["enabled"] = form["enabled"]  # "true" / "false", as marshmallow reads booleans
    if "item_limit" in form:
        text = form["item_limit"].strip()
        body["item_limit"] = None if text == "" else _number(text)
    return validated(CrawlerUpdate(), body)


def _number(text: str) -> int | str:
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else text
