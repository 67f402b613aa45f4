"""HTML listings (seed 001's configured paged list): items and fields found by XPath or CSS,
pages followed by their next link."""

from __future__ import annotations

import functools

from sources.model import DataSource, SubscriberSpec
from sources.page.extract import PagePaths, extract_page
from sources.page.query import PageQuery
from sources.paged import PagedSource
from sources.paged_query import paged_fetch_target
from sources.source_type import SourceContext, SourceType


def _open(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    query = spec.query
    return PagedSource(
        key,
        query["url"],
        functools.partial(extract_page, PagePaths.of(query)),
        context.fetcher,
        context.feed_interval,
        page_limit=query["page_limit"],
        page_interval=query["page_interval"],
        scheduler=context.scheduler,
    )


SOURCE_TYPE = SourceType(query_schema=PageQuery, fetch_target=paged_fetch_target, open=_open)
