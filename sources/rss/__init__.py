"""RSS and Atom feeds: one data source polls a set of feeds for every crawler that names it."""

from __future__ import annotations

from sources.model import DataSource, SubscriberSpec
from sources.rss.query import RssQuery, rss_fetch_target
from sources.source_type import SourceContext, SourceType


def _open(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    from sources.rss.source import RssSource  # its feed parser, when first opened

    return RssSource(
        key,
        spec.query,
        context.fetcher,
        context.feed_interval,
        scheduler=context.scheduler,
        workers=context.workers,
    )


SOURCE_TYPE = SourceType(query_schema=RssQuery, fetch_target=rss_fetch_target, open=_open)
