"""SQL plumbing for the hub: engine, sessions and migrations. The hub alone touches SQL."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def make_engine(url: str) -> Engine:
    """An engine; SQLite gets WAL, a busy timeout and foreign keys: several processes share it.

    SQL errors and logs leave out the statement's parameters, which may hold a user's stored
    credential (blackwidow.credentials).
    """
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True, hide_parameters=True)
    engine = create_engine(
        url, connect_args={"timeout": 15, "check_same_thread": False}, hide_parameters=True
    )

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(connection, _record) -> None:  # type: ignore[no-untyped-def]
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=15000")
        cursor.close()

    return engine


def make_sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    """Apply every migration up to the newest (`blackwidow db upgrade`)."""
    command.upgrade(alembic_config(url), "head")


def needs_schema(engine: Engine) -> bool:
    """True for a database Alembic has never touched, such as a fresh SQLite file."""
    return not inspect(engine).has_table("alembic_version")
