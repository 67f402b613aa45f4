"""Who is calling the hub's API: the admin or a user, by bearer token."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from blackwidow.core.domain_errors import Forbidden
from blackwidow.core.errors import ApiError
from blackwidow.core.tokens import bearer, hash_token, same_secret
from blackwidow.models import User

# built once: every request runs it, and building a statement costs more than running it
_USER_OF_TOKEN = select(User.id).where(User.token_hash == bindparam("token_hash"))


@dataclass(frozen=True)
class Caller:
    user_id: int | None
    is_admin: bool = False


def identify(session: Session, authorization: str | None, admin_token: str | None) -> Caller:
    """The caller behind an Authorization header, or a 401 naming what is wrong."""
    token = bearer(authorization)
    if token is None:
        raise ApiError(401, "unauthorized", "missing bearer token", "Authorization")
    if same_secret(token, admin_token):
        return Caller(user_id=None, is_admin=True)
    # a Core statement on the session's connection: one column needs no ORM machinery, and
    # every request runs this
    user_id = session.connection().scalar(_USER_OF_TOKEN, {"token_hash": hash_token(token)})
    if user_id is None:
        raise ApiError(401, "unauthorized", "unknown token", "Authorization")
    return Caller(user_id=user_id)


def identify_by_hash(session: Session, token_hash: str, admin_token: str | None) -> Caller | None:
    """The caller whose token hashes to `token_hash`, or None: how the dashboard's session,
    which keeps the hash and never the token, is checked again on every request, so a
    changed admin token or a deleted user ends the sessions made with the old one."""
    admin_hash = hash_token(admin_token) if admin_token else None
    if same_secret(token_hash, admin_hash):
        return Caller(user_id=None, is_admin=True)
    user_id = session.connection().scalar(_USER_OF_TOKEN, {"token_hash": token_hash})
    return None if user_id is None else Caller(user_id=user_id)


def require_admin(caller: Caller) -> None:
    if not caller.is_admin:
        raise Forbidden("admin token required", "Authorization")
