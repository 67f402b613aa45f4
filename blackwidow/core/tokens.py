"""Bearer tokens and the cluster secret: parsing, hashing and constant-time comparison.

No SQL here, so nodes can check the cluster secret without knowing the hub's tables.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from blackwidow.core.errors import ApiError


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256: tokens are random 256-bit strings, so a slow hash adds nothing, and a
    leaked database does not leak usable tokens."""
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


def require_cluster(authorization: str | None, cluster_secret: str | None) -> None:
    if not same_secret(bearer(authorization), cluster_secret):
        raise ApiError(401, "unauthorized", "cluster secret required", "Authorization")
