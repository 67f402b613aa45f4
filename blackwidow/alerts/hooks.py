"""Users' webhooks: create, list, delete. A URL is checked against the fetch rules when it is
created (and again at every delivery, since what a name resolves to can change)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blackwidow.core.domain_errors import Conflict, Invalid, NotFound
from blackwidow.models import MAX_INTEGER, Webhook
from sources.fetch.errors import FetchError
from sources.fetch.guard import check_url

MAX_PER_USER = 10  # each event is sent once per webhook: a user's fan-out stays small


def check_target(url: str, allow_hosts: frozenset[str]) -> None:
    """Refused, naming `url`, for an address the hub may not POST to, such as a private one."""
    try:
        check_url(url, allow_hosts)
    except FetchError as error:
        raise Invalid(f"url: {error}", "url") from None


def create(session: Session, user_id: int, url: str, secret: str) -> Webhook:
    owned = session.scalar(select(func.count()).where(Webhook.user_id == user_id))
    if (owned or 0) >= MAX_PER_USER:
        message = f"url: a user has at most {MAX_PER_USER} webhooks; delete one first"
        raise Conflict(message, "url")
    hook = Webhook(user_id=user_id, url=url, secret=secret)
    session.add(hook)
    session.flush()
    return hook


def listing(session: Session, user_id: int) -> list[Webhook]:
    return list(
        session.scalars(select(Webhook).where(Webhook.user_id == user_id).order_by(Webhook.id))
    )


def delete(session: Session, user_id: int, webhook_id: int) -> None:
    """Remove a user's webhook with its deliveries; another user's is reported missing."""
    hook = session.get(Webhook, webhook_id) if webhook_id <= MAX_INTEGER else None
    if hook is None or hook.user_id != user_id:
        raise NotFound(f"no webhook {webhook_id}", "id")
    session.delete(hook)
