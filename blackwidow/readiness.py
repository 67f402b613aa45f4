"""Readiness: whether the hub can serve its API now. Its database answers, its schema is at
the migrations' head (`blackwidow db upgrade` has run), and its item store answers. Liveness
(/healthz) asks none of this: a process that is up but not ready must not be restarted for it,
only kept out of a load balancer's rotation."""

from __future__ import annotations

import functools
import logging
import threading

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db
from blackwidow.core.store import Store

log = logging.getLogger(__name__)

SCHEMA_CHECK_INTERVAL = 5.0  # seconds between looks while a background thread waits


@functools.cache
def _revisions() -> tuple[frozenset[str], frozenset[str]]:
    """The migrations' heads and every revision they know, read once from migrations/."""
    script = ScriptDirectory.from_config(db.alembic_config("sqlite://"))
    known = frozenset(revision.revision for revision in script.walk_revisions())
    return frozenset(script.get_heads()), known


def schema_behind(session: Session) -> str | None:
    """Why the schema is behind the migrations' head, or None when it is not. A database a
    newer release has migrated (a revision these migrations do not know) is not behind."""
    current = frozenset(MigrationContext.configure(session.connection()).get_current_heads())
    heads, known = _revisions()
    if current == heads or current - known:
        return None
    at = ", ".join(sorted(current)) or "no migration"
    return (
        f"the database schema is at {at}, the code needs {', '.join(sorted(heads))}: "
        "run `blackwidow db upgrade`"
    )


def database_problem(sessions: sessionmaker[Session]) -> str | None:
    """Why the hub's database cannot serve it (it does not answer, or its schema is behind),
    one line; None when it can."""
    try:
        with sessions() as session:
            behind = schema_behind(session)
    except SQLAlchemyError as error:
        kind = type(getattr(error, "orig", None) or error).__name__
        return f"database: does not answer ({kind})"
    return f"schema: {behind}" if behind else None


def reasons(sessions: sessionmaker[Session], store: Store) -> list[str]:
    """Why the hub is not ready, one line each; empty when it is."""
    problem = database_problem(sessions)
    found = [problem] if problem else []
    if not store.ping():
        found.append("store: does not answer")
    return found


def await_schema(sessions: sessionmaker[Session], stopping: threading.Event) -> bool:
    """Wait until the schema is at the head, saying why once: a hub's background threads
    (monitor, webhook delivery) begin their rounds then, rather than failing each one with a
    traceback until `blackwidow db upgrade` has run. False when `stopping` was set first."""
    said = None
    while not stopping.is_set():
        behind = database_problem(sessions)
        if behind is None:
            if said is not None:
                log.info("database schema ready thread=%s", threading.current_thread().name)
            return True
        if said is None:  # once: a migration under way changes the reason at every step
            log.warning("waiting thread=%s reason=%s", threading.current_thread().name, behind)
            said = behind
        stopping.wait(SCHEMA_CHECK_INTERVAL)
    return False
