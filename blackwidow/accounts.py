"""Users: the tenants who own crawlers. Only the admin creates them; the token is shown once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blackwidow.errors import ApiError
from blackwidow.models import User
from blackwidow.tokens import hash_token, new_token


def create_user(session: Session, data: dict[str, Any]) -> tuple[User, str]:
    """A new user and their bearer token (only its hash is kept)."""
    if session.scalar(select(User.id).where(User.name == data["name"])) is not None:
        raise ApiError(409, "conflict", f"a user named {data['name']!r} exists", "name")
    token = new_token()
    user = User(name=data["name"], item_limit=data.get("item_limit"), token_hash=hash_token(token))
    session.add(user)
    try:
        session.flush()
    except IntegrityError:  # another request created the same name in between
        raise ApiError(409, "conflict", f"a user named {data['name']!r} exists", "name") from None
    return user, token
