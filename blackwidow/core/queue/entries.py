"""Stream entries: the key of a crawler's stream and an item as entry fields and back.

Apart from the Redis client, so that a node's spool, which keeps entries in this form,
starts without loading it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sources.model import Item, utc_text

KEY_PREFIX = "blackwidow:items:"
_INSTANTS = ("published_at", "fetched_at")


def stream_key(crawler_id: int) -> str:
    return f"{KEY_PREFIX}{crawler_id}"


def entry_fields(item: Item) -> dict[str, str]:
    """An item as stream entry fields: all text, instants in ISO-8601 UTC, None values left out."""
    fields = {}
    for name in (f.name for f in dataclasses.fields(Item)):
        value = getattr(item, name)
        if value is not None:
            fields[name] = utc_text(value) if isinstance(value, datetime) else str(value)
    return fields


def item_from_entry(fields: Mapping[bytes | str, bytes | str]) -> Item:
    """The item an entry encodes; takes fields as redis-py returns them, decoded or not."""
    text = {_decoded(name): _decoded(value) for name, value in fields.items()}
    values: dict[str, Any] = {f.name: text.get(f.name) for f in dataclasses.fields(Item)}
    for name in _INSTANTS:
        if values[name] is not None:
            values[name] = datetime.fromisoformat(values[name])
    if values["crawler_id"] is not None:
        values["crawler_id"] = int(values["crawler_id"])
    return Item(**values)


def _decoded(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
