"""URL canonical form (seed 004's key resolver): one spelling per address, for keys and ids."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from marshmallow import ValidationError

_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_url(url: str) -> str:
    """Lowercase scheme and host, no default port, no fragment, path at least '/'.

    The query string is kept as written: its order can matter to the server.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{host}:{parts.port}"
    if parts.username or parts.password:
        credentials = parts.username or ""
        if parts.password:
            credentials += f":{parts.password}"
        netloc = f"{credentials}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def fetchable(url: str) -> None:
    """What a URL check lets through but no fetch should take: a port past 65535, and
    credentials, which would show wherever the feed URL does (API answers, node logs)."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise ValidationError("port out of range") from None
    if parts.username is not None or parts.password is not None:
        raise ValidationError("credentials in a URL are not allowed")
