"""The source types a crawler can name: adding one is one package and one line here."""

from __future__ import annotations

from collections.abc import Callable

from marshmallow import Schema

from sources import datasift, jsonapi, page, rss, twitter
from sources.model import DataSource, SubscriberSpec
from sources.source_type import SourceContext, SourceType

SOURCE_TYPES: dict[str, SourceType] = {
    "rss": rss.SOURCE_TYPE,
    "twitter": twitter.SOURCE_TYPE,
    "datasift": datasift.SOURCE_TYPE,
    "page": page.SOURCE_TYPE,
    "json": jsonapi.SOURCE_TYPE,
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
