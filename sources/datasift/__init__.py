"""Paid streams (DataSift-style): one stream per distinct query, billed per item."""

from __future__ import annotations

from sources.datasift.query import DatasiftCredential, DatasiftQuery, datasift_fetch_target
from sources.model import DataSource, SubscriberSpec
from sources.source_type import SourceContext, SourceType


def _open(key: str, spec: SubscriberSpec, context: SourceContext) -> DataSource:
    from sources.datasift.source import PaidStreamSource  # its HTTP client, when first opened

    credential = context.credentials.secret(spec)
    return PaidStreamSource(
        key, spec, credential, context.fetcher, context.rate_limit_wait, context.observer
    )


SOURCE_TYPE = SourceType(
    query_schema=DatasiftQuery,
    fetch_target=datasift_fetch_target,
    open=_open,
    credential_schema=DatasiftCredential,
)
