"""The hub's icon at `/favicon.ico`, where browsers look for one unasked; pages link its SVG
twin (static/favicon.svg). Open to anyone, like the sign-in page's stylesheet."""

from __future__ import annotations

from flask import Response

from blackwidow.dashboard.blueprint import blp


@blp.route("/favicon.ico", endpoint="favicon")
def favicon() -> Response:
    return blp.send_static_file("favicon.ico")
