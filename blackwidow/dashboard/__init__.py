"""The operators' dashboard at `/`: server-rendered pages over the same functions the REST
API uses, signed in with an API token kept as a hash in a session cookie. Its views pass the
API's gate (blackwidow.api.gate), which names the caller by that cookie
(blackwidow.session_cookie)."""

from __future__ import annotations

from flask import Flask

from blackwidow.core.settings import Settings
from blackwidow.dashboard import (
    cluster_page,
    crawler_create,
    crawler_pages,
    icon,
    item_exports,
    search_page,
    signin,
    users_page,
)
from blackwidow.dashboard.blueprint import blp
from blackwidow.session_cookie import configure

__all__ = [
    "cluster_page",
    "crawler_create",
    "crawler_pages",
    "icon",
    "init_dashboard",
    "item_exports",
    "search_page",
    "signin",
    "users_page",
]


def init_dashboard(app: Flask, settings: Settings) -> None:
    """Session and CSRF settings, then the pages; before the gate wraps every view."""
    configure(app, settings)
    app.register_blueprint(blp)
