"""The node's liveness with detail (/healthz) and its readiness (/readyz): open to load
balancers and process supervisors, no secret needed."""

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


class NodeReadiness(Schema):
    status = fields.String(metadata={"description": "ready | not_ready"})
    role = fields.String(metadata={"description": "node"})
    reasons = fields.List(fields.String(), metadata={"description": "why not, one line each"})


def blueprint(node: NodeState, credentials: CredentialBook) -> Blueprint:
    blp = Blueprint("health", __name__, description="Liveness and readiness for supervisors")

    @blp.route("/readyz")
    @blp.response(200, NodeReadiness)
    @blp.alt_response(
        503, schema=NodeReadiness, description="not registered with the hub, or the store fails"
    )
    def readyz() -> tuple[Response, int]:
        """Readiness: 200 once the node is registered with the hub and its store took the last
        write, 503 with the reasons otherwise (the hub refused it, does not answer, or the
        node detached and registers again; the store's error as the last write saw it).
        Liveness stays /healthz: a node that is not ready must not be restarted for it."""
        reasons = []
        if not node.registered.is_set():
            problem = node.registration_problem or "no answer from the hub yet"
            reasons.append(f"not registered with the hub: {problem}")
        store = node.health().get("store", {})
        if not store.get("ok", True):
            reasons.append(f"store: {store.get('error')}")
        body = {"status": "not_ready" if reasons else "ready", "role": "node", "reasons": reasons}
        return jsonify(body), 503 if reasons else 200

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
