"""The webhook outbox's figures, read from SQL: deliveries waiting (and how long the oldest
has), those whose last attempt failed, and those given up within the last hour.

Finished deliveries are kept bounded (blackwidow.alerts.delivery.KEEP), so a count of failed
rows would go back as old ones are forgotten: failures are a gauge over a stated window.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Metric
from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from blackwidow.models import WebhookDelivery

FAILED_WINDOW = 3600.0  # seconds: deliveries given up within this long are counted


@dataclass(frozen=True)
class OutboxRows:
    pending: int  # deliveries waiting to be sent, first attempts and retries alike
    retrying: int  # ... of them, those whose last attempt failed
    oldest_pending_at: datetime | None  # when the oldest waiting one was written
    failed_recently: int  # deliveries given up within FAILED_WINDOW of the read


def read(session: Session, now: datetime) -> OutboxRows:
    """Two counting queries, on the outbox's (status, next_attempt_at) index."""
    tried = or_(WebhookDelivery.last_status.is_not(None), WebhookDelivery.last_error.is_not(None))
    pending, retrying, oldest = session.execute(
        select(
            func.count(),
            func.count(case((tried, 1))),
            func.min(WebhookDelivery.created_at),
        ).where(WebhookDelivery.status == "pending")
    ).one()
    failed = session.scalar(
        select(func.count()).where(
            WebhookDelivery.status == "failed",
            WebhookDelivery.finished_at >= now - timedelta(seconds=FAILED_WINDOW),
        )
    )
    return OutboxRows(int(pending), int(retrying), oldest, int(failed or 0))


def families(rows: OutboxRows, now: datetime) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "blackwidow_webhook_deliveries_pending",
        "Webhook deliveries waiting in the outbox to be sent, retries included",
        value=rows.pending,
    )
    yield GaugeMetricFamily(
        "blackwidow_webhook_deliveries_retrying",
        "Webhook deliveries waiting whose last attempt failed",
        value=rows.retrying,
    )
    oldest = rows.oldest_pending_at
    yield GaugeMetricFamily(
        "blackwidow_webhook_oldest_pending_age_seconds",
        "Seconds the oldest waiting webhook delivery has waited (0: none waits)",
        value=0.0 if oldest is None else max(0.0, (now - oldest).total_seconds()),
    )
    yield GaugeMetricFamily(
        "blackwidow_webhook_deliveries_failed_last_hour",
        "Webhook deliveries given up (every attempt failed) within the last hour",
        value=rows.failed_recently,
    )
