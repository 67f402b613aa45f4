"""Item request and response schemas: pages, time windows and exports of items."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from blackwidow.api.list_args import PageArgs as ListPageArgs
from blackwidow.api.list_args import page_limit
from blackwidow.core.store.windows import TIME_FIELDS
from sources.model import Item
from sources.segments import version_of

EXPORT_FORMATS = ("jsonl", "csv")  # a crawler's items as one streamed file (api.exports)


class PageArgs(ListPageArgs):
    """An items page pages as the lists do, 50 items by default."""

    limit = page_limit(50, 1000)


class _Instant(fields.AwareDateTime):
    """An ISO 8601 instant read in UTC (naive: UTC), one the stores can hold (after year 1)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(default_timezone=UTC, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        moment = super()._deserialize(value, attr, data, **kwargs)
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise ValidationError("out of range") from None


class WindowArgs(Schema):
    since = _Instant(metadata={"description": "items at or after this instant (ISO 8601)"})
    until = _Instant(metadata={"description": "items before this instant (ISO 8601)"})
    by = fields.String(
        load_default="fetched_at",
        validate=validate.OneOf(TIME_FIELDS),
        metadata={
            "description": "the instant since and until bound; published_at leaves out "
            "items without one when either is given"
        },
    )

    @validates_schema
    def _ordered(self, data: dict[str, Any], **_: Any) -> None:
        since, until = data.get("since"), data.get("until")
        if since is not None and until is not None and until <= since:
            raise ValidationError("must be after since", "until")


class ItemsArgs(PageArgs, WindowArgs):
    format = fields.String(
        load_default="json",
        validate=validate.OneOf(["json", *EXPORT_FORMATS]),
        metadata={
            "description": "json: a page; jsonl or csv: every item in the window, "
            "streamed, as items.jsonl and items.csv answer (limit and cursor do not apply)"
        },
    )


class ItemOut(Schema):
    id = fields.String()
    crawler_id = fields.Integer()
    source = fields.String()
    url = fields.String(allow_none=True)
    title = fields.String(allow_none=True)
    text = fields.String(allow_none=True, metadata={"description": "plain text"})
    html = fields.String(
        allow_none=True,
        metadata={"description": "the content as published, sanitised HTML; null when none"},
    )
    author = fields.String(allow_none=True)
    published_at = fields.DateTime(allow_none=True)
    fetched_at = fields.DateTime()
    conversation_id = fields.String(allow_none=True)
    in_reply_to = fields.String(allow_none=True)
    version = fields.Method(
        "_version",
        allow_none=True,
        metadata={
            "description": "the start of the time segment this version was collected in "
            "(crawlers with recollect_after); null otherwise"
        },
    )

    def _version(self, item: Item) -> str | None:
        start = version_of(item.id)
        return None if start is None else start.isoformat()


class ItemsOut(Schema):
    items = fields.List(fields.Nested(ItemOut))
    next = fields.String(
        allow_none=True,
        metadata={"description": "the next page's URL (also the Link header); null: the last"},
    )
