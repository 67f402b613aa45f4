"""The hub's Flask app factory: wires settings, SQL, the store, the REST blueprints and the
dashboard."""

from __future__ import annotations

from flask import Flask, jsonify
from flask.typing import ResponseReturnValue

from blackwidow import db
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.api import (
    conversations,
    crawlers,
    credentials,
    health,
    items,
    nodes,
    opml,
    search,
    users,
    webhooks,
)
from blackwidow.api.contention import retry_every_view
from blackwidow.api.context import Hub
from blackwidow.api.gate import guard_every_view, security_scheme
from blackwidow.core.errors import described_api, error_body, register_error_handlers
from blackwidow.core.queue import open_queue
from blackwidow.core.settings import Settings
from blackwidow.core.store import Store, StoreUnavailable, open_store
from blackwidow.dashboard import init_dashboard
from blackwidow.metrics.hub import serve_hub_metrics
from blackwidow.node_client import NodeClient

MAX_REQUEST_BYTES = 1024 * 1024
NODE_ANSWER_TIMEOUT = 2.0  # a crawler's page waits this long for its node's word on its feeds


def create_app(settings: Settings, store: Store | None = None) -> Flask:
    app = Flask("blackwidow")
    engine = db.make_engine(
        settings.database_url, settings.database_busy_timeout, settings.database_timeout
    )
    app.extensions["blackwidow"] = Hub(
        settings=settings,
        sessions=db.make_sessions(engine),
        store=store or open_store(settings.store_url),
        nodes=NodeClient(
            settings.cluster_secret, timeout=NODE_ANSWER_TIMEOUT, networks=settings.node_networks
        ),
        alerts=AlertOutbox(cluster_hook=settings.webhook_url is not None),
        queue=open_queue(settings.redis_url, settings.queue_maxlen),
    )
    api = described_api(app, "Black Widow", "/api/v1", MAX_REQUEST_BYTES, security_scheme)
    for blueprint in (
        health.blp,
        users.blp,
        credentials.blp,
        webhooks.blp,
        crawlers.blp,
        items.blp,
        conversations.blp,
        nodes.blp,
        opml.blp,
        search.blp,
    ):
        api.register_blueprint(blueprint)
    hub = app.extensions["blackwidow"]
    serve_hub_metrics(app, hub.sessions, hub.store, settings)
    init_dashboard(app, settings)
    guard_every_view(app)
    retry_every_view(app)
    register_error_handlers(app)
    app.register_error_handler(StoreUnavailable, _store_unavailable)
    return app


def _store_unavailable(error: StoreUnavailable) -> ResponseReturnValue:
    """Reads fail cleanly while the item store is down; the crawlers keep running."""
    return jsonify(error_body("store_unavailable", str(error))), 503
