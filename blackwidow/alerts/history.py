"""The latest webhook deliveries and their outcomes, newest first: for the REST API and the
operators' dashboard. The delivery worker keeps them bounded (blackwidow.alerts.delivery.KEEP)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow.models import Webhook, WebhookDelivery


def recent(
    session: Session, user_id: int | None, limit: int, after: int | None = None
) -> list[WebhookDelivery]:
    """Deliveries to a user's webhooks (`user_id`), or to the cluster's webhook (None); when
    paging on, those after the delivery `after` in this newest-first order: older ids."""
    query = select(WebhookDelivery).order_by(WebhookDelivery.id.desc()).limit(limit)
    if user_id is None:
        query = query.where(WebhookDelivery.webhook_id.is_(None))
    else:
        owned = select(Webhook.id).where(Webhook.user_id == user_id)
        query = query.where(WebhookDelivery.webhook_id.in_(owned))
    if after is not None:
        query = query.where(WebhookDelivery.id < after)
    return list(session.scalars(query))
