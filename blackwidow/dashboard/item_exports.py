"""A crawler's items as one file, JSON lines or CSV, for whoever is signed in to the dashboard.

The API's exports (`GET /api/v1/crawlers/<id>/items.jsonl` and `.csv`) take a bearer token
only, never the dashboard's cookie, so the dashboard answers the same files itself: the same
owner check, the same store stream, the same rendering (blackwidow.api.exports)."""

from __future__ import annotations

from flask import Response

from blackwidow import crawlers
from blackwidow.api import exports
from blackwidow.api.context import caller, hub, transaction
from blackwidow.dashboard.blueprint import blp


@blp.route("/crawlers/<int:crawler_id>/items.jsonl", endpoint="export", defaults={"name": "jsonl"})
@blp.route("/crawlers/<int:crawler_id>/items.csv", endpoint="export", defaults={"name": "csv"})
def export(crawler_id: int, name: str) -> Response:
    """Every item, newest first; another user's crawler is missing, as on the API."""
    with transaction() as session:
        crawlers.get(session, caller(), crawler_id)
    return exports.response(name, crawler_id, hub().store.stream(crawler_id))
