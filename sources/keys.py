"""Source keys: a stable id for what a data source fetches, so equal queries share one source.

The key is a UUID (version 5) of the canonical query. It is the same in every process and
on every machine, which routing relies on (Python's hash() is not).
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_NAMESPACE = uuid.UUID("6f0c7a52-3f4e-5b9e-9d2a-bd1f1f0e7a11")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_url(url: str) -> str:
    """Normalise a URL: lowercase scheme and host, no default port, no fragment, path '/'.

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
        netloc = f"{parts.username or ''}{':' + parts.password if parts.password else ''}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def _rss_fetch_target(query: dict[str, Any]) -> dict[str, Any]:
    # Keywords filter per subscriber; they do not change what is fetched.
    return {"feeds": sorted({canonical_url(f) for f in query["feeds"]})}


# source type -> the part of its query that decides what the data source fetches
FETCH_TARGETS = {
    "rss": _rss_fetch_target,
}


def source_key(source: str, query: dict[str, Any]) -> str:
    """The source key (query uuid) of a crawler's query."""
    target = {"source": source, **FETCH_TARGETS[source](query)}
    canonical = json.dumps(target, sort_keys=True, separators=(",", ":"))
    return str(uuid.uuid5(_NAMESPACE, canonical))
