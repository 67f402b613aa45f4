"""HTML listings (seed 001's configured paged list): items and fields found by XPath or CSS,
pages followed by their next link."""

from __future__ import annotations

import functools

from sources.model import DataSource, SubscriberSpec
from sources.page.extract import PagePaths, extract_page
from sources.page.query import PageQuery
from sources.paged_query import paged_fetch_target
from sources.source_type import SourceContext, SourceType


def _open(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    from sources.paged import open_listing  # the fetch side, when first opened

    extract = functools.partial(extract_page, PagePaths.of(spec.query))
    return open_listing(key, spec.query, spec.query["url"], extract, context)


SOURCE_TYPE = SourceType(query_schema=PageQuery, fetch_target=paged_fetch_target, open=_open)
