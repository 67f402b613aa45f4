"""Users: the tenants who own crawlers. Only the admin creates and changes them; the token is
shown once; a user may read their own record and nobody else's."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blackwidow import changes
from blackwidow.auth import Caller
from blackwidow.core.domain_errors import Conflict, NotFound
from blackwidow.core.tokens import hash_token, new_token
from blackwidow.models import MAX_INTEGER, User


def create_user(session: Session, data: dict[str, Any]) -> tuple[User, str]:
    """A new user and their bearer token (only its hash is kept)."""
    if session.scalar(select(User.id).where(User.name == data["name"])) is not None:
        raise Conflict(f"a user named {data['name']!r} exists", "name")
    token = new_token()
    user = User(name=data["name"], item_limit=data.get("item_limit"), token_hash=hash_token(token))
    session.add(user)
    try:
        session.flush()
    except IntegrityError:  # another request created the same name in between
        raise Conflict(f"a user named {data['name']!r} exists", "name") from None
    return user, token


def get_user(session: Session, caller: Caller, user_id: int) -> User:
    """A user as the caller may see them: the admin sees all, a user only themself. Anyone
    else's id is reported as missing, not forbidden, like another user's crawler.

    No id passes MAX_INTEGER, and PostgreSQL refuses to compare one that does: not asked.
    """
    user = None
    if (caller.is_admin or caller.user_id == user_id) and user_id <= MAX_INTEGER:
        user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"no user {user_id}", "id")
    return user


def own_user(session: Session, caller: Caller) -> User:
    """The user whose token is calling; the admin token belongs to none."""
    if caller.user_id is None:
        raise NotFound("the admin token is no user's", "Authorization")
    return get_user(session, caller, caller.user_id)


def listing(session: Session, caller: Caller) -> list[User]:
    """The users a caller may see: every user for the admin, else only themself."""
    query = select(User).order_by(User.id)
    if not caller.is_admin:
        query = query.where(User.id == caller.user_id)
    return list(session.scalars(query))


def update_user(session: Session, user: User, edits: dict[str, Any]) -> User:
    """A new item budget (None: no limit). Every crawler of the user is recorded as changed,
    so the monitor reads the new budget and, when it was raised, runs them again."""
    if "item_limit" in edits and edits["item_limit"] != user.item_limit:
        user.item_limit = edits["item_limit"]
        changes.record_user(session, user.id)
    return user
