"""A user's stored credentials of billed sources: checked with the source's own schema, kept
in SQL, pushed to nodes with the subscriber spec (blackwidow.crawler_keys.secrets_for), and
never shown: answers name the fields.

Storing or removing one changes the source key of the user's crawlers whose query names it
(blackwidow.crawler_keys), and gives any that failed for the want of it another chance.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blackwidow import changes, crawlers
from blackwidow.core.domain_errors import Conflict, Invalid, NotFound
from blackwidow.crawler_keys import rekey, stored_credential
from blackwidow.models import Credential, utcnow
from sources.credentials import name_rule
from sources.registry import CREDENTIAL_SCHEMAS


def listing(session: Session, user_id: int) -> list[Credential]:
    return list(
        session.scalars(
            select(Credential)
            .where(Credential.user_id == user_id)
            .order_by(Credential.source, Credential.name)
        )
    )


def put(
    session: Session, user_id: int, source: str, name: str, fields: dict[str, Any]
) -> tuple[Credential, bool]:
    """Store or replace a credential; True when it is new. Errors name the field, never echo
    its value: marshmallow's messages say what is wrong, not what was given."""
    schema = _schema_of(source, name)
    try:
        secret = schema().load(fields)
    except ValidationError as error:
        raise Invalid.from_messages(error.messages) from None
    credential = stored_credential(session, user_id, source, name)
    if credential is not None:
        credential.secret, credential.updated_at = secret, utcnow()
        _credential_changed(session, user_id, source, name, stored=True)
        return credential, False
    credential = Credential(user_id=user_id, source=source, name=name, secret=secret)
    session.add(credential)
    try:
        session.flush()
    except IntegrityError:  # another request stored the same one in between
        raise Conflict(f"{source} credential {name!r} exists", "name") from None
    _credential_changed(session, user_id, source, name, stored=True)
    return credential, True


def delete(session: Session, user_id: int, source: str, name: str) -> None:
    _schema_of(source, name)
    credential = stored_credential(session, user_id, source, name)
    if credential is None:
        raise NotFound(f"no {source} credential named {name!r}", "name")
    session.delete(credential)
    session.flush()
    _credential_changed(session, user_id, source, name, stored=False)


def described(credential: Credential) -> dict[str, Any]:
    """What an answer may say about a credential: which fields it holds, not their values."""
    return {
        "source": credential.source,
        "name": credential.name,
        "fields": sorted(credential.secret),
        "updated_at": credential.updated_at,
    }


def _schema_of(source: str, name: str) -> type[Schema]:
    """The credential schema of a source that takes credentials, once the name is valid."""
    schema = CREDENTIAL_SCHEMAS.get(source)
    if schema is None:
        takes = ", ".join(CREDENTIAL_SCHEMAS)
        message = f"source: no such source takes credentials, these do: {takes}"
        raise NotFound(message, "source")
    try:
        name_rule(name)
    except ValidationError as error:
        raise Invalid.from_messages({"name": error.messages}) from None
    return schema


def _credential_changed(
    session: Session, user_id: int, source: str, name: str, stored: bool
) -> None:
    """New source keys for the crawlers that name it, and another chance for any that failed.
    Each is recorded as changed even when its key is not: the secret pushed with it is."""
    former = rekey(session, user_id, source, name, stored)
    for crawler in former:
        crawlers.reconsider(crawler)
    changes.record(session, former, {c.id: key for c, key in former.items()})
