"""What the node's blueprints share: reading headers and bodies as the node protocol always
has, and admitting a hub call (its generation, its leader's epoch) before its body is read."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flask
import flask_smorest
from flask import request
from marshmallow import Schema, ValidationError
from webargs.flaskparser import FlaskParser

from blackwidow.core.domain_errors import first_invalid_field
from blackwidow.core.errors import ApiError, ErrorOut
from blackwidow.core.node_protocol import EPOCH_HEADER, GENERATION_HEADER, Shard
from blackwidow.core.openapi import CLUSTER_SECRET
from spawn.node import NodeState


class NodeParser(FlaskParser):
    """webargs' parser for the node's bodies: one that is not a JSON object is read as an
    empty one, so its answer is the 422 naming the first field it lacks, as it always was."""

    def load_json(self, req: flask.Request, schema: Schema) -> Any:
        body = req.get_json(silent=True)
        return body if isinstance(body, dict) else {}


class Blueprint(flask_smorest.Blueprint):
    ARGUMENTS_PARSER = NodeParser()


def check_generation(node: NodeState, called: int) -> None:
    """Act only on hub calls made for this registration (the generation the hub gave it).

    A newer generation means the hub wrote this node off (declared it dead, or another
    process registered at this URL): it drops everything at once and registers again, so a
    node cut off from the hub cannot keep crawlers that moved. An older one is a call the hub
    made before the node registered again: refused, and otherwise ignored.
    """
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


def check_epoch(node: NodeState, shard: Shard, epoch: int | None) -> None:
    """Refuse a leader that lost its lock: another has called with a newer epoch."""
    if epoch is not None and not node.admit_epoch(shard, epoch):
        raise ApiError(409, "stale_epoch", "a newer monitor leader called", EPOCH_HEADER)


_AN_ERROR = {"application/json": {"schema": ErrorOut}}
_REFUSED = {
    "400": {"description": "a malformed protocol header", "content": _AN_ERROR},
    "401": {"description": "without the cluster secret", "content": _AN_ERROR},
    "409": {
        "description": "a call for another registration, or from an older leader",
        "content": _AN_ERROR,
    },
}


def read_headers(schema: Schema) -> dict[str, Any]:
    """The request's protocol headers as `schema` reads them, or the 400 naming the first
    malformed one. Read here rather than by webargs: a poll comes every two seconds from
    every hub shard, and webargs' layers cost it more than the reading itself."""
    sent = request.headers
    names = (field.data_key for field in schema.load_fields.values())
    try:
        return schema.load({name: value for name in names if (value := sent.get(name)) is not None})
    except ValidationError as error:
        field, message = first_invalid_field(error.messages)
        raise ApiError(400, "invalid", f"{field}: {message}", field) from None


def hub_call(
    blp: Blueprint, node: NodeState, headers: Schema
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A view the hub calls, given its protocol `headers` (a 400 names a malformed one)
    after the call is admitted: for this registration, from the newest leader of its shard.
    Decorators below this one (its body) run after that."""

    def decorator(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def admitted(*args: Any, **kwargs: Any) -> Any:
            called = read_headers(headers)
            check_generation(node, called["generation"])
            check_epoch(node, called["shard"], called["epoch"])
            return view(*args, called, **kwargs)

        doc = {"security": [{CLUSTER_SECRET: []}], "responses": _REFUSED}
        return blp.doc(parameters=[{"in": "header", "schema": headers}], **doc)(admitted)

    return decorator
