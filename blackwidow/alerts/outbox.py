"""The alerts' outbox: an event is kept as seen (an alert event row, the newest KEEP_EVENTS)
and becomes one delivery row per webhook that should get it, written in the caller's
transaction, so an event is kept exactly when what it reports is.

Nothing is sent here; the delivery worker (blackwidow.alerts.delivery) sends the rows later,
so emitting never waits on a receiver. Rows survive a hub restart. The workers of this process
that `listen` are woken once a transaction that wrote rows commits: with no rows, none of
them looks at the outbox at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from sqlalchemy import delete, insert, select
from sqlalchemy import event as sql_events
from sqlalchemy.orm import Session

from blackwidow.alerts.events import Event
from blackwidow.models import AlertEvent, Webhook, WebhookDelivery, utcnow

log = logging.getLogger(__name__)

KEEP_EVENTS = 1000  # alert events kept, newest first, for the dashboard's Recent alerts


class AlertOutbox:
    """The emitter the hub uses; `cluster_hook` says whether BLACKWIDOW_WEBHOOK_URL is set."""

    def __init__(self, cluster_hook: bool) -> None:
        self._cluster_hook = cluster_hook
        self._listeners: list[Callable[[], None]] = []

    def listen(self, wake: Callable[[], None]) -> None:
        """Call `wake` after each commit that wrote delivery rows."""
        self._listeners.append(wake)

    def _written(self, _session: Session) -> None:
        for wake in self._listeners:
            wake()

    def emit(self, session: Session, events: Iterable[Event]) -> None:
        events = list(events)
        if not events:
            return
        hooks = _hooks_of(session, {e.user_id for e in events if e.user_id is not None})
        now = utcnow()
        rows = []
        for event in events:
            log.info("alert type=%s id=%s user=%s", event.type, event.id, event.user_id)
            targets = [None] if self._cluster_hook else []
            targets += hooks.get(event.user_id, []) if event.user_id is not None else []
            body = event.body()
            rows += [
                {
                    "event_id": event.id,
                    "event_type": event.type,
                    "webhook_id": webhook_id,
                    "body": body,
                    "status": "pending",
                    "attempts": 0,
                    "next_attempt_at": now,
                    "created_at": now,
                }
                for webhook_id in targets
            ]
        session.execute(insert(AlertEvent), [_event_row(event) for event in events])
        _keep_newest_events(session)
        if rows:
            session.execute(insert(WebhookDelivery), rows)
            if self._listeners:  # after the commit: woken earlier, a worker would see no rows
                sql_events.listen(session, "after_commit", self._written, once=True)


def _event_row(event: Event) -> dict[str, object]:
    return {
        "event_id": event.id,
        "event_type": event.type,
        "user_id": event.user_id,
        "body": event.body(),
        "created_at": event.at,
    }


def _keep_newest_events(session: Session) -> None:
    """Forget the alert events beyond the newest KEEP_EVENTS."""
    oldest_kept = session.scalar(
        select(AlertEvent.id).order_by(AlertEvent.id.desc()).offset(KEEP_EVENTS - 1).limit(1)
    )
    if oldest_kept is not None:
        session.execute(delete(AlertEvent).where(AlertEvent.id < oldest_kept))


def _hooks_of(session: Session, user_ids: set[int]) -> dict[int, list[int]]:
    """user id -> the ids of their webhooks."""
    if not user_ids:
        return {}
    hooks: dict[int, list[int]] = {}
    rows = session.execute(select(Webhook.user_id, Webhook.id).where(Webhook.user_id.in_(user_ids)))
    for user_id, webhook_id in rows:
        hooks.setdefault(user_id, []).append(webhook_id)
    return hooks
