"""Signing in and out of the dashboard with a user's or the admin's API token.

A ready-made sign-in link carries the token in the URL's fragment (`/signin#token=...`):
browsers never send a fragment, so it reaches no server or proxy log; the page's script moves
it into the form and wipes it from the address bar and history, and the form is posted,
CSRF-checked, like any other. The page never signs anyone in by itself.
"""

from __future__ import annotations

from flask import redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from blackwidow import session_cookie
from blackwidow.api.context import hub
from blackwidow.core.errors import ApiError
from blackwidow.dashboard.blueprint import blp, safe_next

MAX_TOKEN_CHARS = 500


@blp.route("/signin", methods=["GET", "POST"])
def signin() -> ResponseReturnValue:
    wanted = safe_next(request.values.get("next"))
    if request.method == "GET":
        return render_template("dashboard/signin.html", wanted=wanted, message=None)
    token = request.form.get("token", "").strip()
    try:
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise ApiError(401, "unauthorized", "missing bearer token", "token")
        session_cookie.sign_in(hub().sessions, hub().settings.admin_token, token)
    except ApiError:
        message = "That token is not a user's or the admin's token."
        page = render_template("dashboard/signin.html", wanted=wanted, message=message)
        return page, 401
    return redirect(wanted or url_for("dashboard.cluster"), 303)


@blp.route("/signout", methods=["POST"])
def signout() -> ResponseReturnValue:
    session_cookie.sign_out()
    return redirect(url_for("dashboard.signin"), 303)
