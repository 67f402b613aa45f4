"""The node's HTTP face: the hub pushes (PUT/DELETE) and polls (GET) subscribers here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, jsonify, request
from flask.typing import ResponseReturnValue
from marshmallow import Schema, ValidationError, fields, validate

from blackwidow.errors import ApiError, error_body, invalid_input, register_error_handlers
from blackwidow.metrics.exposition import ENDPOINT as METRICS_ENDPOINT
from blackwidow.metrics.exposition import MetricsAccess, serve_metrics
from blackwidow.node_protocol import (
    ASSIGNED_HEADER,
    EPOCH_HEADER,
    GENERATION_HEADER,
    RENEWAL_HEADER,
    SHARD_HEADER,
    SINCE_HEADER,
    Cursor,
    ProtocolError,
    Renewal,
    Shard,
)
from blackwidow.tokens import require_cluster
from sources import timetable
from sources.credentials import CredentialBook, MissingCredential
from sources.model import DEFAULT_PRIORITY, PRIORITIES, SubscriberSpec
from sources.registry import SOURCE_TYPES
from sources.segments import MIN_RECOLLECT_AFTER
from spawn.metrics import NodeMetrics
from spawn.node import Node

_T = TypeVar("_T")

MAX_REQUEST_BYTES = 8 * 1024 * 1024  # a batch of specs; the hub sends at most MAX_BATCH
MAX_BATCH = 1000  # specs or ids in one batch call


class SpecSchema(Schema):
    crawler_id = fields.Integer(required=True, strict=True)
    user_id = fields.Integer(required=True, strict=True)
    source = fields.String(required=True, validate=validate.OneOf(sorted(SOURCE_TYPES)))
    query = fields.Dict(required=True)
    item_limit = fields.Integer(strict=True, allow_none=True, validate=validate.Range(min=1))
    lease = fields.Integer(strict=True, allow_none=True, validate=validate.Range(min=0))
    retention_days = fields.Integer(strict=True, allow_none=True, validate=validate.Range(min=1))
    credential = fields.Dict(allow_none=True, load_default=None)
    priority = fields.String(load_default=DEFAULT_PRIORITY, validate=validate.OneOf(PRIORITIES))
    recollect_after = fields.Integer(
        strict=True, allow_none=True, validate=validate.Range(min=MIN_RECOLLECT_AFTER)
    )
    schedule = fields.Raw(allow_none=True, load_default=None)  # checked by sources.timetable


def parse_spec(crawler_id: int, body: Any, credentials: CredentialBook) -> SubscriberSpec:
    """A validated spec, or a 422 naming the field; the query is checked by its source type,
    and a billed source's credential must be pushed with it or known to this node."""
    try:
        data = SpecSchema().load(body if isinstance(body, dict) else {})
    except ValidationError as error:
        raise invalid_input(error.messages) from None
    source_type = SOURCE_TYPES[data["source"]]
    data["query"] = _load(source_type.query_schema, data["query"], "query")
    if data["credential"] is not None:
        if source_type.credential_schema is None:
            raise ApiError(422, "invalid", "credential: this source takes none", "credential")
        data["credential"] = _load(source_type.credential_schema, data["credential"], "credential")
    try:
        data["schedule"] = timetable.check(data["schedule"])
    except timetable.ScheduleError as error:
        raise ApiError(422, "invalid", f"{error.field}: {error}", error.field) from None
    if data["crawler_id"] != crawler_id:
        raise ApiError(422, "invalid", "crawler_id: differs from the URL", "crawler_id")
    spec = SubscriberSpec(**data)
    if source_type.credential_schema is not None:
        try:
            credentials.secret(spec)
        except MissingCredential as error:
            raise ApiError(422, "invalid", f"{error.field}: {error}", error.field) from None
    return spec


def _load(schema: type[Schema], data: dict[str, Any], field: str) -> dict[str, Any]:
    try:
        return schema().load(data)
    except ValidationError as error:
        raise invalid_input(error.messages, field) from None


def assigned_ids(header: str | None) -> list[int] | None:
    """The crawler ids the hub still wants here, when its poll names them (None: it does not,
    and the poll confirms every subscriber of its shard)."""
    if header is None:
        return None
    if not header:
        return []
    try:
        return [int(part) for part in header.split(",") if part.strip()]
    except ValueError:
        raise ApiError(400, "invalid", "not a list of crawler ids", ASSIGNED_HEADER) from None


def check_generation(node: Node, header: str | None) -> None:
    """Act only on hub calls made for this registration (the generation the hub gave it).

    A newer generation means the hub wrote this node off (declared it dead, or another
    process registered at this URL): it drops everything at once and registers again, so a
    node cut off from the hub cannot keep crawlers that moved. An older one is a call the hub
    made before the node registered again: refused, and otherwise ignored.
    """
    try:
        called = int(header or "")
    except ValueError:
        raise ApiError(
            400, "invalid", "a generation number is required", GENERATION_HEADER
        ) from None
    own = node.generation
    if own is not None and called > own:
        node.detach(f"the hub is at generation {called}, this node at {own}")
    if own is None:
        raise ApiError(409, "stale_generation", "node is not registered", GENERATION_HEADER)
    if called != own:
        raise ApiError(
            409,
            "stale_generation",
            f"node is at generation {own}, call at {called}",
            GENERATION_HEADER,
        )


def header_value(parse: Callable[[str | None], _T], name: str) -> _T:
    """A protocol header parsed, or a 400 naming it."""
    try:
        return parse(request.headers.get(name))
    except ProtocolError as error:
        raise ApiError(400, "invalid", str(error), name) from None


def check_epoch(node: Node, shard: Shard, header: str | None) -> None:
    """Refuse a leader that lost its lock: another has called with a newer epoch."""
    if header is None:
        return
    if not header.isdigit():
        raise ApiError(400, "invalid", "an epoch is a whole number", EPOCH_HEADER)
    if not node.admit_epoch(shard, int(header)):
        raise ApiError(409, "stale_epoch", "a newer monitor leader called", EPOCH_HEADER)


def batch_of(body: Any, name: str) -> list[Any]:
    """The list a batch call carries under `name`, bounded."""
    entries = body.get(name) if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise ApiError(422, "invalid", f"{name}: expected a list", name)
    if len(entries) > MAX_BATCH:
        raise ApiError(422, "invalid", f"{name}: at most {MAX_BATCH} in one call", name)
    return entries


def put_many(node: Node, entries: list[Any], credentials: CredentialBook) -> dict[str, Any]:
    """Each spec of a batch is taken or refused on its own, answered per crawler."""
    results: dict[str, Any] = {}
    for entry in entries:
        crawler_id = entry.get("crawler_id") if isinstance(entry, dict) else None
        if not isinstance(crawler_id, int) or isinstance(crawler_id, bool):
            raise ApiError(422, "invalid", "subscribers: each needs a crawler_id", "crawler_id")
        try:
            spec = parse_spec(crawler_id, entry, credentials)
        except ApiError as error:
            results[str(crawler_id)] = error_body(error.code, error.message, error.field)
            continue
        results[str(crawler_id)] = {"status": node.pool.put(spec, node.clock())}
    return {"results": results}


def create_node_app(
    node: Node,
    cluster_secret: str | None,
    credentials: CredentialBook | None = None,
    metrics: NodeMetrics | None = None,
    metrics_access: MetricsAccess | None = None,
) -> Flask:
    """The node's HTTP face; `metrics` are the figures its `/metrics` serves (by default
    the pool's state alone, for a node whose sources nobody observes)."""
    credentials = credentials or CredentialBook()
    if metrics is None:
        metrics = NodeMetrics()
        metrics.watch(node.pool, None)
    app = Flask("spawn")
    app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    register_error_handlers(app)
    serve_metrics(app, metrics.registry, metrics_access or MetricsAccess())

    @app.before_request
    def _only_the_hub() -> None:
        if request.endpoint not in ("healthz", METRICS_ENDPOINT):
            require_cluster(request.headers.get("Authorization"), cluster_secret)
            check_generation(node, request.headers.get(GENERATION_HEADER))
            shard = header_value(Shard.parse, SHARD_HEADER)
            check_epoch(node, shard, request.headers.get(EPOCH_HEADER))

    @app.put("/subscribers/<int:crawler_id>")
    def put_subscriber(crawler_id: int) -> ResponseReturnValue:
        spec = parse_spec(crawler_id, request.get_json(silent=True), credentials)
        return jsonify(node.pool.put(spec, node.clock()))

    @app.get("/subscribers/<int:crawler_id>")
    def get_subscriber(crawler_id: int) -> ResponseReturnValue:
        """One subscriber's status with its feeds' health, which the hub shows on its crawler."""
        detail = node.pool.detail(crawler_id)
        if detail is None:
            raise ApiError(404, "not_found", f"no subscriber {crawler_id} here", "crawler_id")
        return jsonify(detail)

    @app.delete("/subscribers/<int:crawler_id>")
    def delete_subscriber(crawler_id: int) -> ResponseReturnValue:
        node.pool.delete(crawler_id)
        return "", 204

    @app.put("/subscribers")
    def put_subscribers() -> ResponseReturnValue:
        entries = batch_of(request.get_json(silent=True), "subscribers")
        return jsonify(put_many(node, entries, credentials))

    @app.delete("/subscribers")
    def delete_subscribers() -> ResponseReturnValue:
        ids = batch_of(request.get_json(silent=True), "crawler_ids")
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ApiError(422, "invalid", "crawler_ids: expected whole numbers", "crawler_ids")
        return jsonify({"removed": [i for i in ids if node.pool.delete(i)]})

    @app.get("/subscribers")
    def poll() -> ResponseReturnValue:
        """Changes since the poller's cursor (everything without one), in one answer."""
        shard = header_value(Shard.parse, SHARD_HEADER)
        since = header_value(Cursor.parse, SINCE_HEADER)
        assigned = assigned_ids(request.headers.get(ASSIGNED_HEADER))
        renewal = header_value(Renewal.parse, RENEWAL_HEADER)
        return jsonify(node.answer_poll(shard, since, assigned, renewal))

    @app.get("/healthz")
    def healthz() -> ResponseReturnValue:
        """Liveness with detail; "degraded" while the store refuses writes (items are held)."""
        health = node.health()
        store_ok = health.get("store", {}).get("ok", True)
        statuses = node.pool.statuses()
        return jsonify(
            {
                **health,
                "status": "ok" if store_ok else "degraded",
                "role": "node",
                "node_id": node.node_id,
                "generation": node.generation,
                "credentials": credentials.names(),  # names only, never a secret
                "registered": node.registered.is_set(),
                "data_sources": node.pool.data_sources(),
                "subscribers": len(statuses),
                "crawlers": sorted(status["crawler_id"] for status in statuses),
                "subscribers_started": node.pool.started,  # steady across a hub restart
                "held": sum(status["held"] for status in statuses),  # items waiting to be stored
            }
        )

    return app
