"""REST: liveness (/healthz), readiness (/readyz) and the hub's health detail (/api/v1/health).

While the schema is behind the migrations' head, a view whose SQL fails answers 503
`schema_behind` with the reason, not a 500 (`no such table`): the question is asked only once
a statement has failed, so it costs a ready hub nothing."""

from __future__ import annotations

from typing import Any

from flask import jsonify
from flask.typing import ResponseReturnValue
from flask_smorest import Blueprint
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from blackwidow import health, readiness
from blackwidow.api.context import hub, transaction
from blackwidow.core.errors import ApiError, api_error_response
from blackwidow.models import utcnow

blp = Blueprint("health", __name__, description="Health for support staff and load balancers")


@blp.route("/healthz")
def healthz() -> dict[str, Any]:
    """Liveness: the process answers. Nothing else is asked."""
    return {"status": "ok", "role": "hub"}


@blp.route("/readyz")
def readyz() -> ResponseReturnValue:
    """Readiness: 200 when the database answers at the schema's head and the store answers,
    else 503 with the reasons."""
    reasons = readiness.reasons(hub().sessions, hub().store)
    body = {"status": "not_ready" if reasons else "ready", "role": "hub", "reasons": reasons}
    return jsonify(body), 503 if reasons else 200


@blp.route("/api/v1/health")
def health_detail() -> dict[str, Any]:
    """Nodes and crawlers by state, the monitor's leader and last cycle, store and queue."""
    with transaction() as session:
        settings = hub().settings
        return health.detail(session, hub().store, utcnow(), settings.monitor_shards, hub().queue)


@blp.app_errorhandler(DBAPIError)
def schema_behind(error: DBAPIError) -> ResponseReturnValue:
    """503 `schema_behind` for a statement that failed while the schema is behind; any other
    SQL error goes on to be the 500 it was."""
    try:
        with hub().sessions() as session:
            behind = readiness.schema_behind(session)
    except SQLAlchemyError:
        behind = None
    if behind is None:
        raise error
    return api_error_response(ApiError(503, "schema_behind", behind, retry_after=5))
