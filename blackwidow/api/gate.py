"""The gate in front of every hub view: the caller is settled before anything reads the
request's body or query, so a stranger gets a 401 whatever they send, never a 400 or 422 that
would tell them the shape of the API. A route is closed unless listed here as open.

The dashboard's pages (outside /api/) pass the same gate, but name their caller by the session
cookie its sign-in set, not by a bearer token; a stranger is sent to the sign-in page, and a
posted form is checked for its CSRF token only once the caller is known."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flask import Flask, g, request

from blackwidow import session_cookie
from blackwidow.api.context import hub
from blackwidow.api.json_body import refuse_unreadable_json
from blackwidow.auth import identify
from blackwidow.core.openapi import CLUSTER_SECRET, TOKEN
from blackwidow.core.tokens import require_cluster

OPEN = frozenset({"static", "api-docs.openapi_json", "health.healthz", "health.health_detail"})
OPEN |= {"health.readyz"}  # for load balancers and process supervisors
OPEN |= {"nodes.NodeCountView"}  # for autoscalers
OPEN |= {"metrics"}  # checks its own token and networks (blackwidow.core.metrics.exposition)
OPEN |= {"dashboard.signin", "dashboard.static", "dashboard.favicon"}  # sign-in page and looks
CLUSTER = frozenset({("nodes.Nodes", "POST")})  # node registration: the cluster secret
CLUSTER |= {("nodes.NodeLeaveView", "POST")}  # a node saying it leaves
SIGNED_IN = "dashboard."  # endpoints whose caller is the dashboard's session, not a token


def guard_every_view(app: Flask) -> None:
    """Wrap every view registered so far; call it before `retry_every_view`, so a busy
    database while identifying the caller is retried like the view's own statements."""
    for endpoint, view in list(app.view_functions.items()):
        app.view_functions[endpoint] = _guarded(endpoint, view)


def _guarded(endpoint: str, view: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(view)
    def run(*args: Any, **kwargs: Any) -> Any:
        _admit(endpoint)
        refuse_unreadable_json()
        return view(*args, **kwargs)

    return run


def _admit(endpoint: str) -> None:
    """Raise the 401 for a caller this endpoint does not admit; remember who is calling."""
    if endpoint.startswith(SIGNED_IN):
        session_cookie.admit(hub().sessions, hub().settings.admin_token, endpoint in OPEN)
        return
    if endpoint in OPEN:
        return
    authorization = request.headers.get("Authorization")
    if (endpoint, request.method) in CLUSTER:
        require_cluster(authorization, hub().settings.cluster_secret)
        return
    with hub().sessions() as session:
        g.caller = identify(session, authorization, hub().settings.admin_token)


def security_scheme(endpoint: str, method: str) -> str | None:
    """The bearer scheme `_admit` asks of a call, as the OpenAPI document names it: none for
    an open route, the cluster secret for node registration, else a user's or admin's token."""
    if endpoint in OPEN or endpoint.startswith(SIGNED_IN):
        return None
    return CLUSTER_SECRET if (endpoint, method) in CLUSTER else TOKEN
