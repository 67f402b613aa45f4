"""The users page: each user's budget, usage, and items delivered against items stored for
the billed sources. The admin sees every user; a user only themself, as on the API
(`GET /api/v1/users`, `GET /api/v1/users/<id>/usage`)."""

from __future__ import annotations

from flask import render_template
from flask.typing import ResponseReturnValue

from blackwidow import accounts, usage
from blackwidow.api.context import caller, transaction
from blackwidow.dashboard.blueprint import blp
from sources.registry import CREDENTIAL_SCHEMAS

SHOWN_USERS = 200


@blp.route("/users", endpoint="users")
def users_page() -> ResponseReturnValue:
    with transaction() as session:
        users = accounts.listing(session, caller())
        reports = [(user, usage.report(session, user)) for user in users[:SHOWN_USERS]]
    return render_template(
        "dashboard/users.html",
        reports=reports,
        more=max(0, len(users) - SHOWN_USERS),
        billed=set(CREDENTIAL_SCHEMAS),
    )
