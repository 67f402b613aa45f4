"""The source types a crawler can name: adding one is one module and one line here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from marshmallow import Schema

from sources.rss_query import RssQuery, rss_fetch_target


@dataclass(frozen=True)
class SourceType:
    query_schema: type[Schema]
    fetch_target: Callable[[dict[str, Any]], dict[str, Any]]


SOURCE_TYPES: dict[str, SourceType] = {
    "rss": SourceType(query_schema=RssQuery, fetch_target=rss_fetch_target),
}
