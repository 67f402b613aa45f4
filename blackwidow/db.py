"""SQL plumbing for the hub: engine, sessions and migrations. The hub alone touches SQL."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, inspect, make_url
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, OperationalError, TimeoutError
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"
# serialization_failure, deadlock_detected, lock_not_available
_POSTGRES_CONTENTION = frozenset({"40001", "40P01", "55P03"})
# connection_exception, operator_intervention (query_canceled: a statement timeout; shutdown)
_POSTGRES_GONE = frozenset({"08", "57"})


def make_engine(url: str, busy_timeout: float = 15.0, wait_timeout: float = 5.0) -> Engine:
    """An engine; SQLite gets WAL, a busy timeout and foreign keys: several processes share it.

    `busy_timeout` (seconds) bounds how long a statement waits for another transaction's lock:
    SQLite's busy timeout, PostgreSQL's lock_timeout. Past it the statement fails with an
    error `is_contention` recognises. `wait_timeout` bounds every wait on a PostgreSQL server
    that does not answer at all (see `_postgres_waits`); past it the error is one
    `is_unreachable` recognises. SQL errors and logs leave out the statement's parameters,
    which may hold a user's stored credential (blackwidow.credentials).
    """
    millis = max(1, round(busy_timeout * 1000))
    backend = make_url(url).get_backend_name()
    if backend == "postgresql":
        return create_engine(
            url,
            connect_args=_postgres_waits(millis, busy_timeout + wait_timeout, wait_timeout),
            pool_pre_ping=True,
            pool_timeout=wait_timeout,
            hide_parameters=True,
        )
    if backend != "sqlite":
        return create_engine(url, pool_pre_ping=True, hide_parameters=True)
    _make_folder(url)
    engine = create_engine(
        url,
        connect_args={"timeout": busy_timeout, "check_same_thread": False},
        hide_parameters=True,
    )

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(connection, _record) -> None:  # type: ignore[no-untyped-def]
        cursor = connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={millis}")
        # switching to WAL takes a lock even when already there: asked first, a connection
        # opens while another process is writing
        if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            cursor.execute("PRAGMA journal_mode=WAL")
        # under WAL, NORMAL syncs at checkpoints rather than at every commit: a commit survives
        # the process crashing, and only an OS crash or power loss can undo the last few
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def _postgres_waits(lock_millis: int, statement: float, wait_timeout: float) -> dict[str, Any]:
    """libpq's bounds on each wait: connecting; a reply that never comes on a cut network (TCP
    user timeout: sent data unacknowledged); an idle connection whose server vanished
    (keepalives); and, on the server, a lock wait and a statement as a whole (seconds)."""
    wait = max(1.0, wait_timeout)
    return {
        "connect_timeout": max(2, math.ceil(wait)),
        "tcp_user_timeout": round(wait * 1000),
        "keepalives": 1,
        "keepalives_idle": max(1, math.ceil(wait / 2)),
        "keepalives_interval": 1,
        "keepalives_count": max(1, math.ceil(wait / 2)),
        "options": (
            f"-c lock_timeout={lock_millis} -c statement_timeout={round(statement * 1000)}"
        ),
    }


def is_contention(error: BaseException) -> bool:
    """True for an error that says only "not now": a lock not granted in time (SQLite busy or
    locked; PostgreSQL lock timeout), a serialization failure or a deadlock. The database
    rolled the transaction back, so running it again is safe."""
    if not isinstance(error, DBAPIError):
        return False
    code = getattr(error.orig, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return getattr(error.orig, "sqlstate", None) in _POSTGRES_CONTENTION


def insert_for(session: Session) -> Callable[..., Any]:
    """The dialect's INSERT, which knows ON CONFLICT (SQLite and PostgreSQL alike)."""
    dialect = session.get_bind().dialect.name
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def is_unreachable(error: BaseException) -> bool:
    """True for an error that says the database did not answer: no pooled connection in time,
    a connection that failed or timed out (a cut network, a server gone), or a statement the
    server cancelled at its timeout. The transaction did not commit; asking later is safe."""
    if isinstance(error, TimeoutError):
        return True
    if not isinstance(error, OperationalError) or isinstance(error.orig, sqlite3.Error):
        return False
    state = getattr(error.orig, "sqlstate", None)
    return error.connection_invalidated or state is None or state[:2] in _POSTGRES_GONE


def make_sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    """Apply every migration up to the newest (`blackwidow db upgrade`)."""
    _make_folder(url)
    command.upgrade(alembic_config(url), "head")


def _make_folder(url: str) -> None:
    """Make a SQLite file's folder when it is missing, as the default one in the data
    directory is on a first run (blackwidow.core.settings.data_dir)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)


def needs_schema(engine: Engine) -> bool:
    """True for a database Alembic has never touched, such as a fresh SQLite file."""
    return not inspect(engine).has_table("alembic_version")
