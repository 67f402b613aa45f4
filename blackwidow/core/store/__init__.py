"""Store back ends by URL: `open_store` turns BLACKWIDOW_STORE into the Store nodes and hub use.

The Cassandra back end (its driver pulls in numpy and more) is imported only for a
cassandra:// URL, so a process on SQLite never loads it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from blackwidow.core.store.base import (
    SearchUnsupported,
    Store,
    StoreRefused,
    StoreUnavailable,
    Write,
)
from blackwidow.core.store.cassandra import config as cassandra_config
from blackwidow.core.store.sqlite import SqliteStore

__all__ = [
    "SearchUnsupported",
    "SqliteStore",
    "Store",
    "StoreRefused",
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
    path = rest[1:]
    try:
        return SqliteStore(path)
    except (sqlite3.Error, OSError) as error:
        why = _why_not(path, error)
        raise StoreRefused(f"BLACKWIDOW_STORE: cannot open {path}: {why}") from None


def _why_not(path: str, error: Exception) -> str:
    """What an operator fixes: the path's own state where it tells (SQLite says only "unable
    to open database file" for each of them), else what SQLite or the OS said."""
    file = Path(path)
    if file.is_dir():
        return "it is a directory, not a file"
    folder = next((p for p in file.parents if p.exists()), None)
    if folder is not None and not folder.is_dir():
        return f"{folder} is a file, not a directory"
    if file.exists() and not os.access(file, os.R_OK | os.W_OK):
        return "no permission to read and write it"
    if folder is not None and not file.exists() and not os.access(folder, os.W_OK):
        return f"no permission to create it in {folder}"
    return f"{type(error).__name__}: {error}"


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
        raise StoreRefused(f"BLACKWIDOW_STORE: not a store URL; use {_ACCEPTED}")
    if scheme not in STORE_OPENERS:
        raise StoreRefused(f"BLACKWIDOW_STORE: unsupported scheme {scheme!r}; use {_ACCEPTED}")
    return scheme, rest


def _named(error: ValueError) -> StoreRefused:
    return StoreRefused(f"BLACKWIDOW_STORE: {error}; use {_ACCEPTED}")


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
    """Open the store a URL names; a bad URL, or a store that cannot be opened (a SQLite file
    that is a directory, unwritable, or not a database), raises StoreRefused naming
    BLACKWIDOW_STORE. A Cassandra store connects on first use: one that does not answer yet
    is an outage (StoreUnavailable), not a refusal.

    Only the scheme and a SQLite file's path are echoed back, because store URLs may one day
    carry credentials.
    """
    scheme, rest = _parts(url)
    try:
        return STORE_OPENERS[scheme](rest)
    except StoreRefused:
        raise
    except ValueError as error:
        raise _named(error) from error
