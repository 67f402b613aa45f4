"""JSON APIs (seed 001's configured JSON reader): items and fields found by JSONPath, pages
followed by cursor or by page number."""

from __future__ import annotations

import functools

from sources.jsonapi.extract import JsonPaths, extract_json
from sources.jsonapi.query import JsonQuery
from sources.model import DataSource, SubscriberSpec
from sources.paged_query import paged_fetch_target
from sources.source_type import SourceContext, SourceType


def _open(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    from sources.paged import open_listing  # the fetch side, when first opened

    paths = JsonPaths.of(spec.query)
    first_url = paths.first_url(spec.query["url"])
    return open_listing(key, spec.query, first_url, functools.partial(extract_json, paths), context)


SOURCE_TYPE = SourceType(query_schema=JsonQuery, fetch_target=paged_fetch_target, open=_open)
