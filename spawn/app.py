"""The node's HTTP face: the hub pushes (PUT/DELETE) and polls (GET) subscribers here.

flask-smorest reads every call's headers and bodies through the node protocol's schemas
(blackwidow.core.node_protocol and node_schemas), answers errors in the hub's one shape, and
describes the protocol at /openapi.json.
"""

from __future__ import annotations

from flask import Flask

from blackwidow.core.errors import described_api, register_error_handlers
from blackwidow.core.metrics.exposition import ENDPOINT as METRICS_ENDPOINT
from blackwidow.core.metrics.exposition import MetricsAccess, serve_metrics
from sources.credentials import CredentialBook
from spawn.api import health, subscribers
from spawn.metrics import NodeMetrics
from spawn.node import NodeState

MAX_REQUEST_BYTES = 8 * 1024 * 1024  # a batch of specs; the hub sends at most MAX_BATCH
METRICS_DOC = {
    "get": {
        "tags": ["metrics"],
        "summary": "The node's figures in Prometheus' text format",
        "description": "Behind the metrics token and networks, when the node has them.",
        "responses": {"200": {"description": "text/plain; version=0.0.4"}},
    }
}


def create_node_app(
    node: NodeState,
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
    metrics.identify(lambda: node.node_id)
    app = Flask("spawn")
    api = described_api(app, "Black Widow node", "/", MAX_REQUEST_BYTES)
    api.register_blueprint(subscribers.blueprint(node, cluster_secret, credentials))
    api.register_blueprint(health.blueprint(node, credentials))
    serve_metrics(app, metrics.registry, metrics_access or MetricsAccess())
    metrics_rule = next(r for r in app.url_map.iter_rules() if r.endpoint == METRICS_ENDPOINT)
    api.spec.path(rule=metrics_rule, operations=METRICS_DOC)
    register_error_handlers(app)
    return app
