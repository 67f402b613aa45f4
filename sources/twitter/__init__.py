"""Twitter/X: the filtered stream (one connection per credential) and recent search."""

from __future__ import annotations

from sources.model import DataSource, SubscriberSpec
from sources.source_type import SourceContext, SourceType
from sources.twitter.query import TwitterCredential, TwitterQuery, twitter_fetch_target


def _open(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    # the client side (tweepy and more) is loaded by the first node that opens one
    from sources.twitter.search import TwitterSearchSource
    from sources.twitter.stream import TwitterStreamSource

    credential = context.credentials.secret(spec)
    if spec.query["mode"] == "stream":
        return TwitterStreamSource(
            key, credential, context.fetcher, context.rate_limit_wait, observer=context.observer
        )
    return TwitterSearchSource(
        key, spec, credential, context.fetcher, context.search_interval, context.rate_limit_wait
    )


SOURCE_TYPE = SourceType(
    query_schema=TwitterQuery,
    fetch_target=twitter_fetch_target,
    open=_open,
    credential_schema=TwitterCredential,
)
