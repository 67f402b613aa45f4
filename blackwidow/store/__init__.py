"""Store back ends by URL: `open_store` turns BLACKWIDOW_STORE into the Store nodes and hub use."""

from __future__ import annotations

from collections.abc import Callable

from blackwidow.store.base import Store
from blackwidow.store.sqlite import SqliteStore

__all__ = ["SqliteStore", "Store", "open_store"]

_ACCEPTED = (
    "sqlite:///relative/path.db or sqlite:////absolute/path.db"
    " (a Cassandra store, cassandra://host1,host2/keyspace, comes later)"
)


def _open_sqlite(rest: str) -> Store:
    """SQLAlchemy's convention: after `sqlite://` comes `/` then the path (`//abs` for absolute)."""
    if not rest.startswith("/") or rest == "/":
        raise ValueError("needs a file path after sqlite:///")
    return SqliteStore(rest[1:])


STORE_OPENERS: dict[str, Callable[[str], Store]] = {
    "sqlite": _open_sqlite,
}


def open_store(url: str) -> Store:
    """Open the store a URL names; a bad URL raises ValueError naming BLACKWIDOW_STORE.

    Only the scheme is echoed back, because store URLs may one day carry credentials.
    """
    scheme, separator, rest = url.partition("://")
    if not separator:
        raise ValueError(f"BLACKWIDOW_STORE: not a store URL; use {_ACCEPTED}")
    opener = STORE_OPENERS.get(scheme)
    if opener is None:
        raise ValueError(f"BLACKWIDOW_STORE: unsupported scheme {scheme!r}; use {_ACCEPTED}")
    try:
        return opener(rest)
    except ValueError as exc:
        raise ValueError(f"BLACKWIDOW_STORE: {exc}; use {_ACCEPTED}") from exc
