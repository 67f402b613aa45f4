"""A crawler's source key: its query's, and whose stored credential it fetches with.

Two users' credentials of one name are two accounts, so a crawler whose user stored the
credential its query names gets a key of its own (`credential_owner`); without one, the
nodes' own credential of that name is shared by everyone who names it. The monitor reads
that credential's secret here (`secrets_for`) to push it with the subscriber spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from blackwidow.models import Crawler, Credential
from sources.credentials import DEFAULT_CREDENTIAL
from sources.keys import source_key
from sources.registry import SOURCE_TYPES


def credential_name(source: str, query: dict[str, Any]) -> str | None:
    """The credential a query names, for a source that connects with one; else None."""
    if SOURCE_TYPES[source].credential_schema is None:
        return None
    return str(query.get("credential", DEFAULT_CREDENTIAL))


def key_for(session: Session, user_id: int, source: str, query: dict[str, Any]) -> str:
    """The source key of a user's validated query, as the user's credentials now stand."""
    name = credential_name(source, query)
    stored = name is not None and stored_credential(session, user_id, source, name) is not None
    return source_key(source, query, credential_owner=user_id if stored else None)


def rekey(
    session: Session, user_id: int, source: str, name: str, stored: bool
) -> dict[Crawler, str]:
    """New source keys for a user's crawlers whose query names a credential just stored
    (`stored`) or removed; those crawlers, each with the key it had before.

    The name is read from the JSON query in Python: SQLite and PostgreSQL spell JSON paths
    differently, and one user's crawlers of one source are few.
    """
    owned = session.scalars(
        select(Crawler).where(Crawler.user_id == user_id, Crawler.source == source)
    )
    former = {c: c.uuid for c in owned if credential_name(c.source, c.query) == name}
    for crawler in former:
        crawler.uuid = source_key(source, crawler.query, user_id if stored else None)
    return former


def stored_credential(session: Session, user_id: int, source: str, name: str) -> Credential | None:
    return session.scalar(
        select(Credential).where(
            Credential.user_id == user_id, Credential.source == source, Credential.name == name
        )
    )


def secrets_for(session: Session, wanted: Sequence[Crawler]) -> dict[int, dict[str, Any]]:
    """crawler id -> the secret of the stored credential its query names, for those whose user
    stored it. One query, whatever the number of crawlers: the monitor asks every cycle."""
    names = {
        c.id: (c.user_id, c.source, name)
        for c in wanted
        if (name := credential_name(c.source, c.query)) is not None
    }
    if not names:
        return {}
    in_use = exists().where(
        Crawler.user_id == Credential.user_id, Crawler.source == Credential.source
    )
    rows = session.execute(
        select(Credential.user_id, Credential.source, Credential.name, Credential.secret).where(
            in_use
        )
    )
    secrets = {(row.user_id, row.source, row.name): row.secret for row in rows}
    return {c: secrets[key] for c, key in names.items() if key in secrets}
