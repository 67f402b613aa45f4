"""The latest webhook deliveries and their outcomes, newest first: for the REST API and the
operators' dashboard. The delivery worker keeps them bounded (blackwidow.alerts.delivery.KEEP)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow.models import MAX_INTEGER, Webhook, WebhookDelivery


def recent(
    session: Session, user_id: int | None, limit: int, before: int | None = None
) -> list[WebhookDelivery]:
    """Deliveries to a user's webhooks (`user_id`), or to the cluster's webhook (None), with
    ids below `before` when paging on."""
    query = select(WebhookDelivery).order_by(WebhookDelivery.id.desc()).limit(limit)
    if user_id is None:
        query = query.where(WebhookDelivery.webhook_id.is_(None))
    else:
        owned = select(Webhook.id).where(Webhook.user_id == user_id)
        query = query.where(WebhookDelivery.webhook_id.in_(owned))
    if before is not None:
        query = query.where(WebhookDelivery.id < min(before, MAX_INTEGER))
    return list(session.scalars(query))
