"""REST: users (admin only)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import accounts
from blackwidow.api.context import caller, transaction
from blackwidow.api.schemas import UserCreate, UserCreated
from blackwidow.auth import require_admin

blp = Blueprint("users", __name__, url_prefix="/api/v1/users", description="Users (admin token)")


@blp.route("")
class Users(MethodView):
    @blp.arguments(UserCreate)
    @blp.response(201, UserCreated)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        with transaction() as session:
            require_admin(caller(session))
            user, token = accounts.create_user(session, data)
            return {"id": user.id, "name": user.name, "item_limit": user.item_limit, "token": token}
