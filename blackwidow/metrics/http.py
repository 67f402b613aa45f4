"""The hub's API requests as a latency histogram by route rule, method and status.

The label is Flask's rule (`/api/v1/crawlers/<int:crawler_id>`), never the raw path, so the
series stay bounded whatever ids and junk callers send; a path no rule matches is `unmatched`.
"""

from __future__ import annotations

import time

from flask import Flask, Response, g, request
from prometheus_client import CollectorRegistry, Histogram

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def measure_requests(app: Flask, registry: CollectorRegistry) -> None:
    """Time every request the app answers, into a histogram in `registry`."""
    seconds = Histogram(
        "blackwidow_http_request_duration_seconds",
        "Time the hub took to answer an API request",
        ["route", "method", "status"],
        buckets=BUCKETS,
        registry=registry,
    )

    @app.before_request
    def _started() -> None:
        g.request_started = time.monotonic()

    @app.after_request
    def _answered(response: Response) -> Response:
        started = g.get("request_started")
        if started is not None:
            rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
            method = request.method if request.method in METHODS else "other"
            seconds.labels(rule, method, str(response.status_code)).observe(
                time.monotonic() - started
            )
        return response
