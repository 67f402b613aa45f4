"""The source types a crawler can name: adding one is one module and one line here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from marshmallow import Schema

from sources.fetcher import GuardedFetcher
from sources.model import DataSource, SubscriberSpec
from sources.rss import RssSource
from sources.rss_query import RssQuery, rss_fetch_target


@dataclass(frozen=True)
class SourceContext:
    """What a node gives its data sources."""

    fetcher: GuardedFetcher
    feed_interval: float


@dataclass(frozen=True)
class SourceType:
    query_schema: type[Schema]
    fetch_target: Callable[[dict[str, Any]], dict[str, Any]]
    open: Callable[[str, dict[str, Any], SourceContext], DataSource]


def _open_rss(key: str, query: dict[str, Any], context: SourceContext) -> DataSource:
    return RssSource(key, query, context.fetcher, context.feed_interval)


SOURCE_TYPES: dict[str, SourceType] = {
    "rss": SourceType(query_schema=RssQuery, fetch_target=rss_fetch_target, open=_open_rss),
}


def opener(context: SourceContext) -> Callable[[str, SubscriberSpec], DataSource]:
    """The pool's way to start the data source for a source key."""
    return lambda key, spec: SOURCE_TYPES[spec.source].open(key, spec.query, context)
