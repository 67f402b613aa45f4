"""Alert events are kept as seen, webhook or not, and only the newest KEEP_EVENTS of them."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.alerts import events, history
from blackwidow.alerts.outbox import KEEP_EVENTS, AlertOutbox
from blackwidow.models import AlertEvent, WebhookDelivery


def test_events_are_kept_without_a_webhook_the_newest_only(
    sessions: sessionmaker[Session],
) -> None:
    seen = [events.node_dead(n, f"http://10.0.0.{n % 250}:8000") for n in range(KEEP_EVENTS + 3)]
    with sessions.begin() as session:
        AlertOutbox(cluster_hook=False).emit(session, seen[:3])
    with sessions.begin() as session:
        AlertOutbox(cluster_hook=False).emit(session, seen[3:])
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(AlertEvent)) == KEEP_EVENTS
        assert session.scalar(select(func.count()).select_from(WebhookDelivery)) == 0
        newest = history.events(session, None, 2)
    assert [s.event.event_id for s in newest] == [seen[-1].id, seen[-2].id]
    assert all(s.deliveries == [] for s in newest)
