"""Readiness: whether the hub can serve its API now. Its database answers, its schema is at
the migrations' head (`blackwidow db upgrade` has run), and its item store answers. Liveness
(/healthz) asks none of this: a process that is up but not ready must not be restarted for it,
only kept out of a load balancer's rotation.

The database's outages are told here too, once per process (`database_outage`): whichever of
its parts finds the database gone first says so, and the first connection the pool gets
again says it is back.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, event
from sqlalchemy.exc import DisconnectionError, InvalidatePoolError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db
from blackwidow.core.outages import Outage
from blackwidow.core.store import Store

log = logging.getLogger(__name__)

SCHEMA_CHECK_INTERVAL = 5.0  # seconds between looks while a background thread waits

# one per engine: every part of a process shares its engine, so they share its outage
_outages: weakref.WeakKeyDictionary[Engine, Outage] = weakref.WeakKeyDictionary()
_outages_lock = threading.Lock()


def database_outage(sessions: sessionmaker[Session]) -> Outage:
    """The outage of the database these sessions use, shared by every part of the process
    that uses it: each says when it found it gone (`failed`), and the pool's next good
    connection (checked by its pre-ping) says it is back."""
    engine = sessions.kw["bind"]
    with _outages_lock:
        outage = _outages.get(engine)
        if outage is None:
            outage = _outages[engine] = Outage(log, "database")
            event.listen(engine, "checkout", lambda *_connection: outage.answered())
        return outage


def is_outage(error: BaseException) -> bool:
    """True when the error, or one it was raised from, says the database did not answer (an
    expected outage: one line, no traceback), rather than a bug."""
    seen: BaseException | None = error
    for _ in range(10):  # a chain is short; a cycle in it must not hang a thread
        if seen is None:
            return False
        if db.is_unreachable(seen) or isinstance(seen, (DisconnectionError, InvalidatePoolError)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


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
        if is_outage(error):
            database_outage(sessions).failed(error)
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
