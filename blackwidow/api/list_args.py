"""Query arguments of the paged lists: a page's `limit` and `cursor`, and each list's filters.

Every list pages the same way (blackwidow.api.paging): `?limit=N`, and the next page at the URL
of the `Link: <...>; rel="next"` header, which carries a `cursor`.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from blackwidow.api.schemas import NAME_RULES
from blackwidow.monitor.states import CRAWLER_STATES
from sources.registry import SOURCE_TYPES

DEFAULT_PAGE = 100
MAX_PAGE = 1000


def page_limit(default: int, most: int) -> fields.Integer:
    return fields.Integer(
        load_default=default,
        validate=validate.Range(min=1, max=most),
        metadata={"description": f"rows per page, 1 to {most} (default {default})"},
    )


class PageArgs(Schema):
    limit = page_limit(DEFAULT_PAGE, MAX_PAGE)
    cursor = fields.String(
        validate=validate.Length(max=4000),
        metadata={
            "description": "where the previous page ended: take the next page's URL from "
            "the Link header; a cursor holds only for the caller and the filters it came with"
        },
    )


class CrawlerListArgs(PageArgs):
    state = fields.String(
        validate=validate.OneOf(CRAWLER_STATES),
        metadata={"description": "only crawlers in this state"},
    )
    source = fields.String(
        validate=validate.OneOf(sorted(SOURCE_TYPES)),
        metadata={"description": "only this source type"},
    )
    uuid = fields.String(
        data_key="uuid",
        attribute="source_key",
        validate=validate.Regexp(r"^[0-9a-f-]{36}$", error="a source key (a UUID)"),
        metadata={"description": "only crawlers of this source key (sharing a data source)"},
    )
    name = fields.String(
        validate=NAME_RULES,
        metadata={"description": "only crawlers whose name contains this, in any case"},
    )


class DeliveriesArgs(PageArgs):
    limit = page_limit(50, 100)
