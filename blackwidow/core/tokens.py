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


def require_cluster(
    authorization: str | None, cluster_secret: str | None, holder: str = "hub"
) -> None:
    """401 unless the call carries the cluster secret. The message tells a missing secret from
    a wrong one, so a misconfigured hub or node is told which (the `holder`'s secret is
    never shown): a wrong one is the likelier mistake, and `401` alone does not say it."""
    given = bearer(authorization)
    if same_secret(given, cluster_secret):
        return
    if given is None:
        message = "the cluster secret is required: send Authorization: Bearer <secret>"
    else:
        message = (
            f"the cluster secret does not match the {holder}'s: set the same"
            " BLACKWIDOW_CLUSTER_SECRET on every hub and node"
        )
    raise ApiError(401, "unauthorized", message, "Authorization")
