"""Store back ends by URL: `open_store` turns BLACKWIDOW_STORE into the Store nodes and hub use.

The Cassandra back end (its driver pulls in numpy and more) is imported only for a
cassandra:// URL, so a process on SQLite never loads it.
"""

from __future__ import annotations

from collections.abc import Callable

from blackwidow.core.store.base import SearchUnsupported, Store, StoreUnavailable, Write
from blackwidow.core.store.cassandra import config as cassandra_config
from blackwidow.core.store.sqlite import SqliteStore

__all__ = [
    "SearchUnsupported",
    "SqliteStore",
    "Store",
    "StoreUnavailable",
    "Write",
    "open_store",
    "upgrade_store",
]

_ACCEPTED = (
    "sqlite:///relative/path.db, sqlite:////absolute/path.db"
    " or cassandra://host1,host2[:port]/keyspace[?consistency=ONE&replication=1]"
)


def _open_sqlite(rest: str) -> Store:
    """SQLAlchemy's convention: after `sqlite://` comes `/` then the path (`//abs` for absolute)."""
    if not rest.startswith("/") or rest == "/":
        raise ValueError("needs a file path after sqlite:///")
    return SqliteStore(rest[1:])


def _open_cassandra(rest: str) -> Store:
    from blackwidow.core.store.cassandra.store import CassandraStore

    return CassandraStore(cassandra_config.parse(rest))


STORE_OPENERS: dict[str, Callable[[str], Store]] = {
    "sqlite": _open_sqlite,
    "cassandra": _open_cassandra,
}


def _parts(url: str) -> tuple[str, str]:
    scheme, separator, rest = url.partition("://")
    if not separator:
        raise ValueError(f"BLACKWIDOW_STORE: not a store URL; use {_ACCEPTED}")
    if scheme not in STORE_OPENERS:
        raise ValueError(f"BLACKWIDOW_STORE: unsupported scheme {scheme!r}; use {_ACCEPTED}")
    return scheme, rest


def _named(error: ValueError) -> ValueError:
    return ValueError(f"BLACKWIDOW_STORE: {error}; use {_ACCEPTED}")


def upgrade_store(url: str) -> str:
    """Bring the store's schema up to date (`blackwidow db upgrade`); say what was done.

    SQLite upgrades itself whenever it is opened; Cassandra's schema changes only here, so
    production DDL runs when an operator asks for it.
    """
    scheme, rest = _parts(url)
    if scheme != "cassandra":
        open_store(url).close()
        return f"{scheme} schema is current"
    try:
        config = cassandra_config.parse(rest)
    except ValueError as error:
        raise _named(error) from None
    from blackwidow.core.store.cassandra.store import upgrade_schema

    applied = upgrade_schema(config)
    done = f"applied versions {applied}" if applied else "already current"
    return f"cassandra keyspace {config.keyspace} {done}"


def open_store(url: str) -> Store:
    """Open the store a URL names; a bad URL raises ValueError naming BLACKWIDOW_STORE.

    Only the scheme is echoed back, because store URLs may one day carry credentials.
    """
    scheme, rest = _parts(url)
    try:
        return STORE_OPENERS[scheme](rest)
    except ValueError as error:
        raise _named(error) from error
