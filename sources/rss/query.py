"""What an RSS crawler asks for: its query schema, and the part of it that decides the fetch."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from sources.url_keys import key_rules
from sources.urls import canonical_url, fetchable

MAX_FEEDS = 100
MAX_PARAMETERS = 50  # names in one list of url_keys

_PARAMETER = fields.String(validate=validate.Length(min=1, max=100))


class UrlKeysRules(Schema):
    """Query parameters the key resolver drops besides its defaults, and defaults it keeps."""

    drop = fields.List(_PARAMETER, load_default=list, validate=validate.Length(max=MAX_PARAMETERS))
    keep = fields.List(_PARAMETER, load_default=list, validate=validate.Length(max=MAX_PARAMETERS))


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
    url_keys = fields.Nested(UrlKeysRules)


def rss_fetch_target(query: dict[str, Any]) -> dict[str, Any]:
    """Keywords filter per subscriber, so the set of feeds decides the data source, and the
    url_keys rules, which decide the ids it gives (absent when they are the defaults)."""
    target: dict[str, Any] = {"feeds": sorted({canonical_url(f) for f in query["feeds"]})}
    rules = key_rules(query)
    if rules:
        target["url_keys"] = rules
    return target
