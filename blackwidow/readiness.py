"""Readiness: whether the hub can serve its API now. Its database answers, its schema is at
the migrations' head (`blackwidow db upgrade` has run), and its item store answers. Liveness
(/healthz) asks none of this: a process that is up but not ready must not be restarted for it,
only kept out of a load balancer's rotation."""

from __future__ import annotations

import functools

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db
from blackwidow.store import Store


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


def reasons(sessions: sessionmaker[Session], store: Store) -> list[str]:
    """Why the hub is not ready, one line each; empty when it is."""
    found = []
    try:
        with sessions() as session:
            behind = schema_behind(session)
        if behind:
            found.append(f"schema: {behind}")
    except SQLAlchemyError as error:
        kind = type(getattr(error, "orig", None) or error).__name__
        found.append(f"database: does not answer ({kind})")
    if not store.ping():
        found.append("store: does not answer")
    return found
