"""Request and response schemas: they validate input and describe the API in OpenAPI."""

from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate

from blackwidow import name_rule
from blackwidow.models import MAX_INTEGER
from sources.model import DEFAULT_PRIORITY, PRIORITIES
from sources.registry import CREDENTIAL_SCHEMAS, SOURCE_TYPES
from sources.segments import MAX_RECOLLECT_AFTER, MIN_RECOLLECT_AFTER

MAX_RETENTION_DAYS = 7300  # Cassandra's longest TTL: 20 years
MAX_BATCH = 1000  # crawlers per batch create: one transaction, a short write lock

# PostgreSQL refuses what SQLite stores: text longer than its column, NUL characters and
# integers past MAX_INTEGER. Checked here, such input is a 422 on both rather than a 500.
NAME_RULES = [  # a user's name, and a part of a crawler's as a filter gives it
    validate.Length(min=1, max=name_rule.NAME_LENGTH),
    validate.ContainsNoneOf("\x00", error="must not contain NUL characters"),
]
_COUNT_RULE = validate.Range(min=1, max=MAX_INTEGER)


class CrawlerName(fields.String):
    """A crawler's name, as blackwidow.name_rule has it: trimmed as it is read, then checked
    (one line, no control characters, at most NAME_LENGTH)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return name_rule.checked(text)
        except name_rule.NameRefused as refused:
            raise ValidationError(str(refused)) from None


_crawler_name = CrawlerName(required=True)
_limit = fields.Integer(strict=True, allow_none=True, validate=_COUNT_RULE)
_retention = fields.Integer(
    strict=True,
    allow_none=True,
    validate=validate.Range(min=1, max=MAX_RETENTION_DAYS),
    metadata={"description": "days the crawler's items are kept; null keeps them"},
)
_RECOLLECT_HELP = (
    "seconds per time segment: an item already collected is collected again, as a new "
    f"version, once its segment has passed (at least {MIN_RECOLLECT_AFTER}); null: never"
)
_recollect = fields.Integer(
    strict=True,
    allow_none=True,
    validate=validate.Range(min=MIN_RECOLLECT_AFTER, max=MAX_RECOLLECT_AFTER),
    metadata={"description": _RECOLLECT_HELP},
)
_SCHEDULE_HELP = (
    '{"every": seconds} | {"cron": "*/15 * * * *", "timezone"?: "Europe/Paris"} | '
    '{"cron": ..., "timezone"?: ..., "for": seconds}, a window the crawler runs in; '
    "null: polled at the node's interval, always running (docs/sources.md: Schedules)"
)
_schedule = fields.Raw(allow_none=True, metadata={"description": _SCHEDULE_HELP})
_PRIORITY_HELP = (
    f"{' | '.join(PRIORITIES)}: orders the crawler's fetches against others' "
    "when its node is overloaded"
)


class UserCreate(Schema):
    name = fields.String(required=True, validate=NAME_RULES)
    item_limit = _limit


class UserOut(Schema):
    id = fields.Integer()
    name = fields.String()
    item_limit = fields.Integer(allow_none=True)


class UserCreated(UserOut):
    token = fields.String(metadata={"description": "bearer token; shown only once"})


class UserUpdate(Schema):
    item_limit = _limit


def _credential_fields() -> str:
    listed = "; ".join(f"{s}: {', '.join(c().fields)}" for s, c in CREDENTIAL_SCHEMAS.items())
    return f"the fields of the source's credential, checked by source ({listed})"


class CredentialFields(Schema):
    """Any object here: the source named in the path decides which fields it must hold."""

    class Meta:
        unknown = INCLUDE
        description = _credential_fields()


class CredentialOut(Schema):
    source = fields.String()
    name = fields.String()
    field_names = fields.List(
        fields.String(),
        data_key="fields",
        attribute="fields",
        metadata={"description": "the names of the fields stored; values are never shown"},
    )
    updated_at = fields.DateTime()


class SourceUsage(Schema):
    crawlers = fields.Integer()
    items_stored = fields.Integer()
    items_delivered = fields.Integer()


class CrawlerUsage(Schema):
    id = fields.Integer()
    name = fields.String()
    source = fields.String()
    state = fields.String()
    item_limit = fields.Integer(allow_none=True)
    items_collected = fields.Integer()
    items_delivered = fields.Integer()


class UsageOut(Schema):
    user_id = fields.Integer()
    item_limit = fields.Integer(allow_none=True)
    items_stored = fields.Integer(metadata={"description": "items stored, against the limit"})
    items_delivered = fields.Integer(metadata={"description": "items providers delivered (billed)"})
    remaining = fields.Integer(
        allow_none=True, metadata={"description": "item_limit - items_stored; null: no limit"}
    )
    by_source = fields.Dict(keys=fields.String(), values=fields.Nested(SourceUsage))
    crawlers = fields.List(fields.Nested(CrawlerUsage))


class CrawlerCreate(Schema):
    name = _crawler_name
    source = fields.String(required=True, validate=validate.OneOf(sorted(SOURCE_TYPES)))
    query = fields.Dict(required=True, metadata={"description": "per source; see docs/sources.md"})
    item_limit = _limit
    retention_days = _retention
    recollect_after = _recollect
    enabled = fields.Boolean(load_default=True)
    priority = fields.String(
        load_default=DEFAULT_PRIORITY,
        validate=validate.OneOf(list(PRIORITIES)),
        metadata={"description": _PRIORITY_HELP},
    )
    schedule = _schedule


class CrawlerBatch(Schema):
    crawlers = fields.List(
        fields.Nested(CrawlerCreate),
        required=True,
        validate=validate.Length(min=1, max=MAX_BATCH),
        metadata={"description": f"1 to {MAX_BATCH} crawlers, each as POST /crawlers takes it"},
    )


class CrawlerUpdate(Schema):
    name = CrawlerName()
    query = fields.Dict()
    item_limit = _limit
    retention_days = _retention
    recollect_after = _recollect
    enabled = fields.Boolean()
    priority = fields.String(
        validate=validate.OneOf(list(PRIORITIES)), metadata={"description": _PRIORITY_HELP}
    )
    schedule = _schedule


class CrawlerOut(Schema):
    id = fields.Integer()
    uuid = fields.String(metadata={"description": "source key"})
    name = fields.String()
    user_id = fields.Integer()
    source = fields.String()
    query = fields.Dict()
    item_limit = fields.Integer(allow_none=True)
    retention_days = fields.Integer(allow_none=True)
    recollect_after = fields.Integer(allow_none=True, metadata={"description": _RECOLLECT_HELP})
    enabled = fields.Boolean()
    priority = fields.String(metadata={"description": _PRIORITY_HELP})
    schedule = fields.Dict(allow_none=True, metadata={"description": _SCHEDULE_HELP})
    state = fields.String()
    next_start = fields.DateTime(
        allow_none=True,
        metadata={"description": "when a `scheduled` crawler's window opens next (UTC)"},
    )
    node_id = fields.Integer(allow_none=True)
    items_collected = fields.Integer()
    items_delivered = fields.Integer(metadata={"description": "items its providers delivered"})
    rate = fields.Float(
        metadata={
            "description": "items stored per second over the last `rate_window_seconds`: "
            "what was stored in that window, divided by it, so it falls to zero a window "
            "after the last item"
        }
    )
    rate_window_seconds = fields.Float(
        metadata={
            "description": "the window `rate` is over: BLACKWIDOW_RATE_WINDOW (300), or the "
            "time since the hub first counted the crawler while that is shorter"
        }
    )
    last_error = fields.String(allow_none=True)


class CrawlerFeedsOut(Schema):
    node_id = fields.Integer(allow_none=True, metadata={"description": "the node asked"})
    feeds = fields.List(
        fields.Dict(),
        allow_none=True,
        metadata={
            "description": "each feed's health: url, last_fetch_at, last_status, "
            "last_success_at, error, error_streak, next_due_at, entries, title (the feed's own); "
            "null when no node "
            "runs the crawler or answers, or its source has no feeds"
        },
    )


class CrawlerBatchOut(Schema):
    crawlers = fields.List(fields.Nested(CrawlerOut), metadata={"description": "in request order"})


class NodeRegister(Schema):
    url = fields.Url(
        required=True,
        schemes={"http", "https"},
        require_tld=False,
        validate=validate.Length(max=500),
    )
    capacity = fields.Integer(strict=True, load_default=100, validate=_COUNT_RULE)


class NodeLeave(Schema):
    generation = fields.Integer(
        required=True,
        strict=True,
        metadata={"description": "the generation the node registered in"},
    )


class NodeLeaving(Schema):
    id = fields.Integer()
    state = fields.String()  # leaving, or left when it said so before


class NodeRegistered(Schema):
    id = fields.Integer()
    url = fields.String()
    generation = fields.Integer()  # hub calls to the node carry it; the node checks them by it
    # the hub database's identity (blackwidow.cluster_identity): the node scopes its files by it
    cluster_id = fields.String(metadata={"description": "the cluster's id, a UUID"})


class NodeOut(Schema):
    id = fields.Integer()
    url = fields.String()
    state = fields.String()  # active | suspect | leaving | left | dead
    generation = fields.Integer()
    capacity = fields.Integer(metadata={"description": "data sources it registered to hold"})
    subscribers = fields.Integer()
    data_sources = fields.Integer(metadata={"description": "all it runs, at its latest poll"})
    cpu_percent = fields.Float(
        allow_none=True,
        metadata={"description": "its process's CPU in use (% of one core); null: not reported"},
    )
    memory_bytes = fields.Integer(
        allow_none=True,
        metadata={"description": "its process's resident memory; null: not reported"},
    )
    last_polled_at = fields.DateTime(allow_none=True)
    phi = fields.Float(
        allow_none=True,
        metadata={"description": "the failure detector's phi at the last judgement; null: none"},
    )


class NodeCount(Schema):
    active = fields.Integer()
    desired = fields.Integer()


class WebhookCreate(Schema):
    url = fields.Url(
        required=True,
        schemes={"http", "https"},
        require_tld=False,
        validate=validate.Length(max=500),
        metadata={"description": "where events are POSTed; refused if private, as feeds are"},
    )
    secret = fields.String(
        required=True,
        load_only=True,
        validate=[
            validate.Length(min=8, max=200),
            validate.ContainsNoneOf("\x00", error="must not contain NUL characters"),
        ],
        metadata={"description": "signs every body (X-Blackwidow-Signature); never shown"},
    )


class WebhookOut(Schema):
    id = fields.Integer()
    user_id = fields.Integer()
    url = fields.String()
    created_at = fields.DateTime()


class DeliveryOut(Schema):
    id = fields.Integer()
    event_id = fields.String(metadata={"description": "the event's id, the same in every retry"})
    type = fields.String(attribute="event_type")
    webhook_id = fields.Integer(allow_none=True, metadata={"description": "null: the cluster's"})
    status = fields.String(metadata={"description": "pending | delivered | failed"})
    attempts = fields.Integer()
    last_status = fields.Integer(
        allow_none=True, metadata={"description": "receiver's HTTP status"}
    )
    last_error = fields.String(allow_none=True)
    created_at = fields.DateTime()
    next_attempt_at = fields.DateTime(allow_none=True)
    finished_at = fields.DateTime(allow_none=True)
