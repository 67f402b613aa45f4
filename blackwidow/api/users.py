"""REST: users. The admin creates and changes them; a user reads their own record and usage."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import accounts, usage
from blackwidow.api.context import caller, transaction
from blackwidow.api.schemas import UsageOut, UserCreate, UserCreated, UserOut, UserUpdate
from blackwidow.auth import require_admin
from blackwidow.models import User

blp = Blueprint(
    "users", __name__, url_prefix="/api/v1/users", description="Users (admin token, or their own)"
)


@blp.route("")
class Users(MethodView):
    @blp.response(200, UserOut(many=True))
    def get(self) -> list[User]:
        """Every user (admin only)."""
        with transaction() as session:
            who = caller()
            require_admin(who)
            return accounts.listing(session, who)

    @blp.arguments(UserCreate())
    @blp.response(201, UserCreated)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Create a user (admin only); the answer shows its token, once."""
        with transaction() as session:
            require_admin(caller())
            user, token = accounts.create_user(session, data)
            return {"id": user.id, "name": user.name, "item_limit": user.item_limit, "token": token}


@blp.route("/me")
class Me(MethodView):
    @blp.response(200, UserOut)
    def get(self) -> User:
        """The caller's own record: how a client holding only a token learns its user id (the
        command line's `credentials` and `users usage`). The admin token is no user's: 404."""
        with transaction() as session:
            return accounts.own_user(session, caller())


@blp.route("/<int:user_id>")
class UserById(MethodView):
    @blp.response(200, UserOut)
    def get(self, user_id: int) -> User:
        """One user's record, for that user or the admin."""
        with transaction() as session:
            return accounts.get_user(session, caller(), user_id)

    @blp.arguments(UserUpdate())
    @blp.response(200, UserOut)
    def patch(self, edits: dict[str, Any], user_id: int) -> User:
        """A new item budget; null removes it. Raised, it lets stopped crawlers run again."""
        with transaction() as session:
            who = caller()
            require_admin(who)
            return accounts.update_user(session, accounts.get_user(session, who, user_id), edits)


@blp.route("/<int:user_id>/usage")
class UserUsage(MethodView):
    @blp.response(200, UsageOut)
    def get(self, user_id: int) -> dict[str, Any]:
        """Items the user stored and was delivered, by source and crawler, and what remains."""
        with transaction() as session:
            return usage.report(session, accounts.get_user(session, caller(), user_id))
