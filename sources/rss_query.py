"""What an RSS crawler asks for: its query schema, and the part of it that decides the fetch."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from marshmallow import Schema, ValidationError, fields, validate

from sources.urls import canonical_url

MAX_FEEDS = 100


def fetchable(url: str) -> None:
    """What a URL check lets through but no fetch should take: a port past 65535, and
    credentials, which would show wherever the feed URL does (API answers, node logs)."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise ValidationError("port out of range") from None
    if parts.username is not None or parts.password is not None:
        raise ValidationError("credentials in a URL are not allowed")


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
