"""What alerts happened, newest first: the latest webhook deliveries and their outcomes (for
the REST API and the operators' dashboard), and the alert events themselves with the
deliveries made of each (the dashboard's Recent alerts), whether or not a webhook is set.
The delivery worker keeps deliveries bounded (blackwidow.alerts.delivery.KEEP), the outbox
the events (blackwidow.alerts.outbox.KEEP_EVENTS)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from blackwidow.models import AlertEvent, Webhook, WebhookDelivery


def recent(
    session: Session, user_id: int | None, limit: int, after: int | None = None
) -> list[WebhookDelivery]:
    """Deliveries to a user's webhooks (`user_id`), or to the cluster's webhook (None); when
    paging on, those after the delivery `after` in this newest-first order: older ids."""
    query = select(WebhookDelivery).order_by(WebhookDelivery.id.desc()).limit(limit)
    query = query.where(_delivered_to(user_id))
    if after is not None:
        query = query.where(WebhookDelivery.id < after)
    return list(session.scalars(query))


@dataclass(frozen=True)
class Seen:
    """An alert event and its deliveries to the webhooks of whoever looks (none: no webhook)."""

    event: AlertEvent
    deliveries: list[WebhookDelivery]


def events(session: Session, user_id: int | None, limit: int) -> list[Seen]:
    """The latest events about a user (`user_id`) with the deliveries to their webhooks; or
    (None, the admin's view) every event, with the deliveries to the cluster's webhook."""
    query = select(AlertEvent).order_by(AlertEvent.id.desc()).limit(limit)
    if user_id is not None:
        query = query.where(AlertEvent.user_id == user_id)
    listed = list(session.scalars(query))
    ids = [event.event_id for event in listed]
    made = session.scalars(
        select(WebhookDelivery)
        .where(WebhookDelivery.event_id.in_(ids), _delivered_to(user_id))
        .order_by(WebhookDelivery.id)
    )
    by_event: dict[str, list[WebhookDelivery]] = {}
    for delivery in made:
        by_event.setdefault(delivery.event_id, []).append(delivery)
    return [Seen(event, by_event.get(event.event_id, [])) for event in listed]


def _delivered_to(user_id: int | None) -> ColumnElement[bool]:
    """Deliveries to a user's webhooks, or to the cluster's (None)."""
    if user_id is None:
        return WebhookDelivery.webhook_id.is_(None)
    owned = select(Webhook.id).where(Webhook.user_id == user_id)
    return WebhookDelivery.webhook_id.in_(owned)
