"""The source types a crawler can name: adding one is one module and one line here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from marshmallow import Schema

from sources.credentials import CredentialBook
from sources.datasift import PaidStreamSource
from sources.datasift_query import DatasiftCredential, DatasiftQuery, datasift_fetch_target
from sources.fetcher import GuardedFetcher
from sources.model import DataSource, SubscriberSpec
from sources.observer import UNOBSERVED, SourceObserver
from sources.rss import RssSource
from sources.rss_query import RssQuery, rss_fetch_target
from sources.scheduler import FetchScheduler
from sources.twitter_query import TwitterCredential, TwitterQuery, twitter_fetch_target
from sources.twitter_search import TwitterSearchSource
from sources.twitter_stream import TwitterStreamSource


@dataclass(frozen=True)
class SourceContext:
    """What a node gives its data sources."""

    fetcher: GuardedFetcher
    feed_interval: float
    credentials: CredentialBook = field(default_factory=CredentialBook)
    search_interval: float = 60.0  # seconds between polls of a recent search
    rate_limit_wait: float = 60.0  # first wait after a 429 from a provider; doubles while it lasts
    # the node's one fetch scheduler for polled sources; None: each RSS source runs its own
    scheduler: FetchScheduler | None = None
    observer: SourceObserver = UNOBSERVED  # what the node counts of streams


@dataclass(frozen=True)
class SourceType:
    query_schema: type[Schema]
    fetch_target: Callable[[dict[str, Any]], dict[str, Any]]
    open: Callable[[str, SubscriberSpec, SourceContext], DataSource]
    credential_schema: type[Schema] | None = None  # billed sources connect with a credential


def _open_rss(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    return RssSource(
        key, spec.query, context.fetcher, context.feed_interval, scheduler=context.scheduler
    )


def _open_twitter(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    credential = context.credentials.secret(spec)
    if spec.query["mode"] == "stream":
        return TwitterStreamSource(
            key, credential, context.fetcher, context.rate_limit_wait, observer=context.observer
        )
    return TwitterSearchSource(
        key, spec, credential, context.fetcher, context.search_interval, context.rate_limit_wait
    )


def _open_datasift(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    credential = context.credentials.secret(spec)
    return PaidStreamSource(
        key, spec, credential, context.fetcher, context.rate_limit_wait, context.observer
    )


SOURCE_TYPES: dict[str, SourceType] = {
    "rss": SourceType(query_schema=RssQuery, fetch_target=rss_fetch_target, open=_open_rss),
    "twitter": SourceType(
        query_schema=TwitterQuery,
        fetch_target=twitter_fetch_target,
        open=_open_twitter,
        credential_schema=TwitterCredential,
    ),
    "datasift": SourceType(
        query_schema=DatasiftQuery,
        fetch_target=datasift_fetch_target,
        open=_open_datasift,
        credential_schema=DatasiftCredential,
    ),
}


# The sources that connect with a credential, and the schema each checks it with.
CREDENTIAL_SCHEMAS: dict[str, type[Schema]] = {
    source: source_type.credential_schema
    for source, source_type in sorted(SOURCE_TYPES.items())
    if source_type.credential_schema is not None
}


def opener(context: SourceContext) -> Callable[[str, SubscriberSpec], DataSource]:
    """The pool's way to start the data source for a source key."""
    return lambda key, spec: SOURCE_TYPES[spec.source].open(key, spec, context)
