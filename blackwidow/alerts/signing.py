"""Webhook signatures, as GitHub signs its webhooks: an HMAC-SHA256 of the raw body. Pure."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Blackwidow-Signature"


def signature(secret: str, body: bytes) -> str:
    """The header's value: `sha256=<hex digest>`; the receiver computes the same and compares."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
