"""The node's liveness with detail (/healthz): open to load balancers, no secret needed."""

from __future__ import annotations

from flask import Response, jsonify
from marshmallow import Schema, fields

from sources.credentials import CredentialBook
from spawn.api.blueprint import Blueprint
from spawn.node import NodeState


class NodeHealth(Schema):
    status = fields.String(metadata={"description": "ok | degraded: the store refuses writes"})
    role = fields.String(metadata={"description": "node"})
    node_id = fields.Integer(allow_none=True)
    generation = fields.Integer(allow_none=True)
    credentials = fields.Dict(metadata={"description": "source -> credential names, no secret"})
    registered = fields.Boolean()
    data_sources = fields.List(fields.Dict())
    subscribers = fields.Integer()
    crawlers = fields.List(fields.Integer())
    subscribers_started = fields.Integer(metadata={"description": "steady across hub restarts"})
    held = fields.Integer(metadata={"description": "items waiting to be stored"})


def blueprint(node: NodeState, credentials: CredentialBook) -> Blueprint:
    blp = Blueprint("health", __name__, description="Liveness for the hub and load balancers")

    @blp.route("/healthz")
    @blp.response(200, NodeHealth)
    def healthz() -> Response:
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

    return blp
