"""What an RSS crawler asks for: its query schema, and the part of it that decides the fetch."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from sources.urls import canonical_url, fetchable

MAX_FEEDS = 100


class RssQuery(Schema):
    feeds = fields.List(
        fields.Url(schemes={"http", "https"}, require_tld=False, validate=fetchable),
        required=True,
        validate=validate.Length(min=1, max=MAX_FEEDS),
    )
    keywords = fields.List(
        fields.String(validate=validate.Length(min=1, max=200)),
        load_default=list,
        validate=validate.Length(max=100),
    )


def rss_fetch_target(query: dict[str, Any]) -> dict[str, Any]:
    """Keywords filter per subscriber, so only the set of feeds decides the data source."""
    return {"feeds": sorted({canonical_url(f) for f in query["feeds"]})}
