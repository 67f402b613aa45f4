"""REST: a user's stored credentials of billed sources; answers name fields, never values."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import accounts, credentials
from blackwidow.api.context import caller, transaction
from blackwidow.api.schemas import CredentialFields, CredentialOut

blp = Blueprint(
    "credentials",
    __name__,
    url_prefix="/api/v1/users/<int:user_id>/credentials",
    description="Credentials a user stores for billed sources (admin token, or their own)",
)


@blp.route("")
class Credentials(MethodView):
    @blp.response(200, CredentialOut(many=True))
    def get(self, user_id: int) -> list[dict[str, Any]]:
        """The user's credentials by source and name, with their fields' names, never values."""
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
            return [credentials.described(c) for c in credentials.listing(session, user_id)]


@blp.route("/<source>/<name>")
class CredentialByName(MethodView):
    @blp.arguments(CredentialFields())
    @blp.response(200, CredentialOut)
    @blp.alt_response(201, schema=CredentialOut, description="stored for the first time")
    def put(
        self, fields: dict[str, Any], user_id: int, source: str, name: str
    ) -> tuple[dict[str, Any], int]:
        """Store or replace a credential; crawlers naming it fetch with it from then on."""
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
            stored, created = credentials.put(session, user_id, source, name, fields)
            return credentials.described(stored), 201 if created else 200

    @blp.response(204)
    def delete(self, user_id: int, source: str, name: str) -> None:
        """Delete a credential."""
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
            credentials.delete(session, user_id, source, name)
