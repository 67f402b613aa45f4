"""The node protocol's bodies as marshmallow schemas: the subscriber spec the hub pushes,
read here and nowhere else into a `SubscriberSpec`, the batches that carry specs and ids,
and the answers, which the node's OpenAPI description shows."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate

from sources import timetable
from sources.model import DEFAULT_PRIORITY, PRIORITIES, SubscriberSpec
from sources.registry import SOURCE_TYPES
from sources.segments import MIN_RECOLLECT_AFTER

MAX_BATCH = 1000  # specs or ids in one batch call


class SubscriberSpecSchema(Schema):
    """A `SubscriberSpec` as JSON (`SubscriberSpec.to_json`), checked: the query and the
    credential by the schemas of its source type, the schedule by `sources.timetable`."""

    crawler_id = fields.Integer(required=True, strict=True)
    user_id = fields.Integer(required=True, strict=True)
    source = fields.String(required=True, validate=validate.OneOf(sorted(SOURCE_TYPES)))
    query = fields.Dict(required=True, metadata={"description": "checked by the source type"})
    item_limit = fields.Integer(strict=True, allow_none=True, validate=validate.Range(min=1))
    lease = fields.Integer(strict=True, allow_none=True, validate=validate.Range(min=0))
    retention_days = fields.Integer(strict=True, allow_none=True, validate=validate.Range(min=1))
    credential = fields.Dict(
        allow_none=True,
        load_default=None,
        metadata={"description": "the secret of the user's credential; null: the node's own"},
    )
    priority = fields.String(load_default=DEFAULT_PRIORITY, validate=validate.OneOf(PRIORITIES))
    recollect_after = fields.Integer(
        strict=True, allow_none=True, validate=validate.Range(min=MIN_RECOLLECT_AFTER)
    )
    schedule = fields.Raw(allow_none=True, load_default=None)

    @post_load
    def _spec(self, data: dict[str, Any], **kwargs: Any) -> SubscriberSpec:
        source_type = SOURCE_TYPES[data["source"]]
        data["query"] = _nested(source_type.query_schema, data["query"], "query")
        if data["credential"] is not None:
            if source_type.credential_schema is None:
                raise ValidationError({"credential": ["this source takes none"]})
            data["credential"] = _nested(
                source_type.credential_schema, data["credential"], "credential"
            )
        try:
            data["schedule"] = timetable.check(data["schedule"])
        except timetable.ScheduleError as error:
            raise ValidationError({error.field: [str(error)]}) from None
        return SubscriberSpec(**data)


def _nested(schema: type[Schema], data: dict[str, Any], field: str) -> dict[str, Any]:
    try:
        return schema().load(data)
    except ValidationError as error:
        raise ValidationError({field: error.messages}) from None


def _whole_numbers(values: list[Any]) -> None:
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ValidationError("expected whole numbers")


_BATCH_LENGTH = validate.Length(max=MAX_BATCH, error=f"at most {MAX_BATCH} in one call")


class SubscriberBatch(Schema):
    subscribers = fields.List(
        fields.Dict(),
        required=True,
        validate=_BATCH_LENGTH,
        metadata={"description": "subscriber specs, each taken or refused on its own"},
    )


class CrawlerIdBatch(Schema):
    crawler_ids = fields.List(
        fields.Raw(metadata={"type": "integer"}),
        required=True,
        validate=[_BATCH_LENGTH, _whole_numbers],
    )


class SubscriberStatus(Schema):
    """A subscriber as its node reports it (a poll's `subscribers` hold the same)."""

    crawler_id = fields.Integer()
    digest = fields.String(metadata={"description": "of the spec the subscriber runs"})
    run = fields.String()
    delivered = fields.Integer()
    state = fields.String()
    items_collected = fields.Integer()
    lease = fields.Integer(allow_none=True)
    held = fields.Integer(metadata={"description": "items waiting to be stored"})
    dropped = fields.Integer()
    last_error = fields.String(allow_none=True)
    failing = fields.Boolean()
    feeds = fields.List(fields.Dict(), metadata={"description": "on GET only: feeds' health"})


class BatchPlaced(Schema):
    results = fields.Dict(
        keys=fields.String(),
        values=fields.Dict(),
        metadata={"description": 'crawler id -> {"status": ...} or {"error": ...}'},
    )


class Removed(Schema):
    removed = fields.List(fields.Integer(), metadata={"description": "the ids this node had"})
    counts = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        metadata={
            "description": "crawler id -> its items stored, the store's count once the"
            " removed subscriber's last write ended (those known)"
        },
    )


class PollAnswer(Schema):
    """What changed since the poll's cursor; `full` when the answer is everything instead."""

    cursor = fields.String(metadata={"description": "STREAM:SEQ, sent back on the next poll"})
    full = fields.Boolean()
    renewal = fields.String(allow_none=True, metadata={"description": "token to echo back"})
    load = fields.Dict(metadata={"description": "data sources, CPU and memory in use"})
    subscribers = fields.List(fields.Dict())
    data_sources = fields.List(fields.Dict())
    removed = fields.List(fields.Integer())
    removed_data_sources = fields.List(fields.String())
    departed_data_sources = fields.List(fields.Dict())
    departed_subscribers = fields.List(fields.Dict())
    totals = fields.Dict(metadata={"description": "subscribers, data sources, held items"})
