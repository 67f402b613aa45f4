"""REST: liveness (/healthz) and the hub's health detail (/api/v1/health)."""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint

from blackwidow import health
from blackwidow.api.context import hub, transaction
from blackwidow.models import utcnow

blp = Blueprint("health", __name__, description="Health for support staff and load balancers")


@blp.route("/healthz")
def healthz() -> dict[str, Any]:
    """Liveness: the hub process answers."""
    return {"status": "ok", "role": "hub"}


@blp.route("/api/v1/health")
def health_detail() -> dict[str, Any]:
    """Nodes and crawlers by state, the monitor's leader and last cycle, store and queue."""
    with transaction() as session:
        settings = hub().settings
        return health.detail(session, hub().store, utcnow(), settings.monitor_shards, hub().queue)
