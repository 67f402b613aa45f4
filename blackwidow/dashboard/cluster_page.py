"""The cluster page: health with its reasons, nodes (their states marked stale with their age
when the monitor stopped updating them), the cluster's items stored per minute, the monitor's
leaders and last cycle, store and queue health, and the latest alert events, with or
without a webhook to send them to (the admin: every event, beside its delivery to the cluster
webhook; a user: the events about them, beside their own webhooks' deliveries).

Read through the functions behind `GET /api/v1/health`, `GET /api/v1/nodes` (the admin's),
`GET /api/v1/nodes/count` (anyone's) and the alerts' history (blackwidow.alerts.history,
whose deliveries `.../webhooks/deliveries` lists): a user sees what the API shows a user.
The admin removes a dead node here as `DELETE /api/v1/nodes/<id>` does.
"""

from __future__ import annotations

from flask import flash, redirect, render_template, url_for
from flask.typing import ResponseReturnValue

from blackwidow import health, node_records
from blackwidow.alerts import history
from blackwidow.api.context import caller, hub, transaction
from blackwidow.auth import require_admin
from blackwidow.core.domain_errors import Conflict
from blackwidow.dashboard import chart, freshness, throughput
from blackwidow.dashboard.blueprint import blp
from blackwidow.models import utcnow

SHOWN_ALERTS = 10


@blp.route("/", endpoint="cluster")
def cluster_page() -> ResponseReturnValue:
    """Health with its reasons, states marked stale when their shard's monitor stopped
    cycling, and the caller's items stored per minute over the rate window."""
    who, settings, now = caller(), hub().settings, utcnow()
    shards = settings.monitor_shards
    with transaction() as session:
        detail = health.detail(session, hub().store, now, shards, hub().queue)
        fresh = freshness.read(session, shards, settings.poll_interval, now)
        stored = throughput.samples(session, who, now, settings.rate_window)
        nodes = node_records.report(session, settings.monitor_shards) if who.is_admin else None
        weighted = settings.routing == "weighted"
        count = node_records.count(
            session, weighted, settings.capacity_headroom, settings.min_nodes
        )
        alerts = history.events(session, None if who.is_admin else who.user_id, SHOWN_ALERTS)
    minutes = throughput.minutes_of(settings.rate_window)
    counts = throughput.per_minute(stored, now.timestamp(), minutes)
    return render_template(
        "dashboard/cluster.html",
        detail=detail,
        fresh=fresh,
        throughput=chart.chart(counts, now),
        rate_window=settings.rate_window,
        nodes=nodes,
        count=count,
        alerts=alerts,
        phi_suspect=settings.phi_suspect,
        phi_dead=settings.phi_dead,
    )


@blp.route("/nodes/<int:node_id>/remove", methods=["POST"], endpoint="remove_node")
def remove_node(node_id: int) -> ResponseReturnValue:
    """The admin forgets a dead node, as `DELETE /api/v1/nodes/<id>` does; a live one is
    refused, and the page says why."""
    with transaction() as session:
        require_admin(caller())
        try:
            node_records.remove(session, node_id)
        except Conflict as error:
            flash(f"Node {node_id} not removed: {error.message}", "error")
            return redirect(url_for("dashboard.cluster"), 303)
    flash(f"Node {node_id} removed.", "done")
    return redirect(url_for("dashboard.cluster"), 303)
