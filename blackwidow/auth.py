"""Who is calling: the admin, a user (by bearer token) or a node (by the cluster secret).

Tokens are stored as SHA-256 hashes: they are random 256-bit strings, so a slow hash adds
nothing, and a leaked database does not leak usable tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow.errors import ApiError
from blackwidow.models import User


@dataclass(frozen=True)
class Caller:
    user_id: int | None
    is_admin: bool = False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_secret(given: str | None, expected: str | None) -> bool:
    """Constant-time comparison; an unset secret matches nothing."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def identify(session: Session, authorization: str | None, admin_token: str | None) -> Caller:
    """The caller behind an Authorization header, or a 401 naming what is wrong."""
    token = bearer(authorization)
    if token is None:
        raise ApiError(401, "unauthorized", "missing bearer token", "Authorization")
    if same_secret(token, admin_token):
        return Caller(user_id=None, is_admin=True)
    user_id = session.scalar(select(User.id).where(User.token_hash == hash_token(token)))
    if user_id is None:
        raise ApiError(401, "unauthorized", "unknown token", "Authorization")
    return Caller(user_id=user_id)


def require_admin(caller: Caller) -> None:
    if not caller.is_admin:
        raise ApiError(403, "forbidden", "admin token required", "Authorization")


def require_cluster(authorization: str | None, cluster_secret: str | None) -> None:
    if not same_secret(bearer(authorization), cluster_secret):
        raise ApiError(401, "unauthorized", "cluster secret required", "Authorization")
