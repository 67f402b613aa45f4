"""The node's subscribers: the hub pushes (PUT) and removes (DELETE) them, one or a batch at
a time, and polls (GET) what changed in them. Only the hub may call: every call carries the
cluster secret and the headers of `blackwidow.core.node_protocol.CallHeaders`."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify, request
from flask.views import MethodView
from marshmallow import ValidationError

from blackwidow.core.errors import ApiError, ErrorOut, error_body, invalid_input
from blackwidow.core.node_protocol import CallHeaders, PollHeaders
from blackwidow.core.node_schemas import (
    BatchPlaced,
    CrawlerIdBatch,
    PollAnswer,
    Removed,
    SubscriberBatch,
    SubscriberSpecSchema,
    SubscriberStatus,
)
from blackwidow.core.tokens import require_cluster
from sources.credentials import CredentialBook, MissingCredential
from sources.model import SubscriberSpec
from sources.registry import SOURCE_TYPES
from spawn.api.blueprint import Blueprint, hub_call
from spawn.node import NodeState

# Built once: webargs builds a schema given as a class anew at every call, and so would we.
SPECS = SubscriberSpecSchema()
CALL = CallHeaders()
POLL = PollHeaders()


def checked(spec: SubscriberSpec, crawler_id: int, credentials: CredentialBook) -> SubscriberSpec:
    """A spec for the crawler it is pushed for, whose billed source's credential was pushed
    with it or is known to this node; else the 422 naming the field."""
    if spec.crawler_id != crawler_id:
        raise ApiError(422, "invalid", "crawler_id: differs from the URL", "crawler_id")
    if SOURCE_TYPES[spec.source].credential_schema is not None:
        try:
            credentials.secret(spec)
        except MissingCredential as error:
            raise ApiError(422, "invalid", f"{error.field}: {error}", error.field) from None
    return spec


def parse_spec(crawler_id: int, body: Any, credentials: CredentialBook) -> SubscriberSpec:
    """One spec of a batch, validated, or the 422 naming the field."""
    try:
        spec = SPECS.load(body)
    except ValidationError as error:
        raise invalid_input(error.messages) from None
    return checked(spec, crawler_id, credentials)


def put_many(node: NodeState, entries: list[Any], credentials: CredentialBook) -> dict[str, Any]:
    """Each spec of a batch is taken or refused on its own, answered per crawler."""
    results: dict[str, Any] = {}
    for entry in entries:
        crawler_id = entry.get("crawler_id")
        if not isinstance(crawler_id, int) or isinstance(crawler_id, bool):
            raise ApiError(422, "invalid", "subscribers: each needs a crawler_id", "crawler_id")
        try:
            spec = parse_spec(crawler_id, entry, credentials)
        except ApiError as error:
            results[str(crawler_id)] = error_body(error.code, error.message, error.field)
            continue
        results[str(crawler_id)] = {"status": node.pool.put(spec, node.clock())}
    return {"results": results}


def blueprint(
    node: NodeState, cluster_secret: str | None, credentials: CredentialBook
) -> Blueprint:
    blp = Blueprint("subscribers", __name__, description="The hub's subscribers on this node")

    @blp.before_request
    def _only_the_hub() -> None:
        require_cluster(request.headers.get("Authorization"), cluster_secret, "node")

    @blp.route("/subscribers/<int:crawler_id>")
    class Subscriber(MethodView):
        @hub_call(blp, node, CALL)
        @blp.arguments(SPECS)
        @blp.response(200, SubscriberStatus)
        def put(self, _: Any, spec: SubscriberSpec, crawler_id: int) -> Response:
            """Create or update the crawler's subscriber; the same spec twice changes nothing."""
            return jsonify(node.pool.put(checked(spec, crawler_id, credentials), node.clock()))

        @hub_call(blp, node, CALL)
        @blp.response(200, SubscriberStatus)
        @blp.alt_response(404, schema=ErrorOut, description="no such subscriber here")
        def get(self, _: Any, crawler_id: int) -> Response:
            """One subscriber's status with its feeds' health, shown on its crawler's page."""
            detail = node.pool.detail(crawler_id)
            if detail is None:
                raise ApiError(404, "not_found", f"no subscriber {crawler_id} here", "crawler_id")
            return jsonify(detail)

        @hub_call(blp, node, CALL)
        @blp.response(204)
        def delete(self, _: Any, crawler_id: int) -> Response:
            """Remove the crawler's subscriber, if this node has it."""
            node.pool.delete(crawler_id)
            return Response(status=204)

    @blp.route("/subscribers")
    class Subscribers(MethodView):
        @hub_call(blp, node, POLL)
        @blp.response(200, PollAnswer)
        def get(self, headers: dict[str, Any]) -> Response:
            """Changes since the poller's cursor (everything without one), in one answer."""
            answer = node.answer_poll(
                headers["shard"], headers["since"], headers["assigned"], headers["renewal"]
            )
            return jsonify(answer)

        @hub_call(blp, node, CALL)
        @blp.arguments(SubscriberBatch())
        @blp.response(200, BatchPlaced)
        def put(self, _: Any, batch: dict[str, Any]) -> Response:
            """Push a batch of specs, each taken or refused on its own."""
            return jsonify(put_many(node, batch["subscribers"], credentials))

        @hub_call(blp, node, CALL)
        @blp.arguments(CrawlerIdBatch())
        @blp.response(200, Removed)
        def delete(self, _: Any, batch: dict[str, Any]) -> Response:
            """Remove a batch of subscribers; the answer names those this node had, with the
            final count of each that is known."""
            removed, counts = [], {}
            for crawler_id in batch["crawler_ids"]:
                existed, count = node.pool.remove(crawler_id)
                if existed:
                    removed.append(crawler_id)
                if count is not None:
                    counts[str(crawler_id)] = count
            return jsonify({"removed": removed, "counts": counts})

    return blp
