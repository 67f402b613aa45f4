"""The delivery worker: sends due outbox rows, signed, and retries failures with exponential
backoff until a receiver answers 2xx or the attempts run out. At least once: a row is
claimed (its attempt counted, its next attempt pushed past the send) before it is sent, so a
hub that dies mid-send sends it again later, and several hub processes never send one row
at once. Runs on its own thread; the monitor only writes rows.

The thread touches the database only while it knows rows wait: it looks once when it starts
(rows a stopped process left), and then only when its process's outbox wrote rows, until none
is pending; between retries it sleeps until the next one is due. With no webhook configured
no row is ever written, so it never asks. A database outage is one line (blackwidow.readiness).

Time is passed in (`deliver_due(now)`), so tests step through a backoff without sleeping.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import readiness
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.alerts.sender import SendFailed, WebhookSender
from blackwidow.core.settings import Settings
from blackwidow.models import Webhook, WebhookDelivery, utcnow
from sources.backoff import Backoff

log = logging.getLogger(__name__)

BATCH = 50  # rows claimed per round
CLAIM_FOR = 60.0  # seconds a claimed row waits before another round may take it again
KEEP = 100  # finished deliveries kept per webhook, newest first
RETRY_ROUND = Backoff(first=1.0, cap=15.0)  # seconds before a round that failed runs again
MAX_SLEEP = 600.0  # seconds at most before a pending row is looked at again (REDELIVERY's cap)
REDELIVERY = Backoff(first=2.0, cap=600.0)  # seconds before attempt n+1 after n failed ones
ATTEMPTS = 12  # retries over about 37 minutes in all


Send = Callable[[str, str, str, str], int]  # (url, secret, body, event type) -> HTTP status


@dataclass(frozen=True)
class Claimed:
    id: int
    webhook_id: int | None
    event_type: str
    body: str
    attempts: int


class Deliverer:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        send: Send,
        cluster_hook: tuple[str, str] | None,
        retry: Backoff = REDELIVERY,
        attempts: int = ATTEMPTS,
    ) -> None:
        self._sessions = sessions
        self._send = send
        self._cluster_hook = cluster_hook  # (url, secret) from the settings
        self._retry = retry
        self._attempts = attempts

    def deliver_due(self, now: datetime) -> int:
        """Send every row due at `now` (a batch at most); how many were sent."""
        claimed = self._claim(now)
        hooks = self._hooks({c.webhook_id for c in claimed if c.webhook_id is not None})
        outcomes = [(row, self._attempt(row, hooks)) for row in claimed]
        with self._sessions.begin() as session:
            for row, (status, error) in outcomes:
                self._record(session, row, status, error, now)
            for webhook_id in {row.webhook_id for row in claimed}:
                _keep_newest(session, webhook_id)
        return len(claimed)

    def next_due(self) -> datetime | None:
        """When the next pending row is due; None when no row is pending."""
        with self._sessions() as session:
            return session.scalar(
                select(func.min(WebhookDelivery.next_attempt_at)).where(
                    WebhookDelivery.status == "pending"
                )
            )

    def _claim(self, now: datetime) -> list[Claimed]:
        with self._sessions.begin() as session:
            due = session.scalars(
                select(WebhookDelivery)
                .where(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= now)
                .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
                .limit(BATCH)
            ).all()
            claimed = []
            for row in due:
                taken = session.execute(
                    update(WebhookDelivery)
                    .where(
                        WebhookDelivery.id == row.id,
                        WebhookDelivery.status == "pending",
                        WebhookDelivery.attempts == row.attempts,
                    )
                    .values(
                        attempts=row.attempts + 1,
                        next_attempt_at=now + timedelta(seconds=CLAIM_FOR),
                    )
                    .execution_options(synchronize_session=False)
                )
                if taken.rowcount == 1:  # type: ignore[attr-defined]
                    claimed.append(
                        Claimed(row.id, row.webhook_id, row.event_type, row.body, row.attempts + 1)
                    )
            return claimed

    def _hooks(self, ids: set[int]) -> dict[int, tuple[str, str]]:
        if not ids:
            return {}
        with self._sessions() as session:
            rows = session.execute(
                select(Webhook.id, Webhook.url, Webhook.secret).where(Webhook.id.in_(ids))
            )
            return {row.id: (row.url, row.secret) for row in rows}

    def _attempt(
        self, row: Claimed, hooks: dict[int, tuple[str, str]]
    ) -> tuple[int | None, str | None]:
        """The receiver's status, or the reason nothing was sent."""
        hook = self._cluster_hook if row.webhook_id is None else hooks.get(row.webhook_id)
        if hook is None:
            return None, "webhook no longer configured"
        try:
            return self._send(hook[0], hook[1], row.body, row.event_type), None
        except SendFailed as error:
            return None, str(error)

    def _record(
        self, session: Session, row: Claimed, status: int | None, error: str | None, now: datetime
    ) -> None:
        delivered = status is not None and 200 <= status < 300
        values: dict = {"last_status": status, "last_error": error}
        if delivered:
            values.update(status="delivered", finished_at=now, next_attempt_at=None)
        elif row.attempts >= self._attempts:
            values.update(status="failed", finished_at=now, next_attempt_at=None)
        else:
            retry_at = now + timedelta(seconds=self._retry.delay(row.attempts))
            values.update(next_attempt_at=retry_at)
        if not delivered:
            reason = error or f"HTTP {status}"
            log.warning(
                "webhook delivery failed delivery=%s webhook=%s attempt=%s reason=%s",
                row.id,
                row.webhook_id or "cluster",
                row.attempts,
                reason,
            )
        session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == row.id, WebhookDelivery.attempts == row.attempts)
            .values(**values)
            .execution_options(synchronize_session=False)
        )


def _keep_newest(session: Session, webhook_id: int | None) -> None:
    """Forget a webhook's finished deliveries beyond the newest KEEP."""
    mine = (
        WebhookDelivery.webhook_id.is_(None)
        if webhook_id is None
        else WebhookDelivery.webhook_id == webhook_id
    )
    finished = WebhookDelivery.status != "pending"
    oldest_kept = session.scalar(
        select(WebhookDelivery.id)
        .where(mine, finished)
        .order_by(WebhookDelivery.id.desc())
        .offset(KEEP - 1)
        .limit(1)
    )
    if oldest_kept is not None:
        session.execute(
            delete(WebhookDelivery).where(mine, finished, WebhookDelivery.id < oldest_kept)
        )


class DeliveryThread(threading.Thread):
    """Runs the deliverer in a hub process until stopped, while rows wait (`wake`); a failed
    round is retried with backoff, an outage of the database said once, a bug with its
    traceback."""

    def __init__(self, deliverer: Deliverer, sessions: sessionmaker[Session]) -> None:
        super().__init__(name="webhook-delivery", daemon=True)
        self._deliverer = deliverer
        self._sessions = sessions
        self._database = readiness.database_outage(sessions)
        self._stopping = threading.Event()
        self._woken = threading.Event()

    def wake(self) -> None:
        """Rows were written: deliver them (from any thread)."""
        self._woken.set()

    def run(self) -> None:
        readiness.await_schema(self._sessions, self._stopping)
        self._woken.set()  # one look at start: rows an earlier process left
        while not self._stopping.is_set():
            self._woken.wait()
            self._woken.clear()
            self._deliver_pending()

    def _deliver_pending(self) -> None:
        """Rounds until no row is pending (or a wake or stop comes while waiting for one)."""
        failures = 0
        while not self._stopping.is_set():
            try:
                if self._deliverer.deliver_due(utcnow()):
                    failures = 0
                    continue
                due_at = self._deliverer.next_due()
            except Exception as error:  # the rows wait for the next round
                failures += 1
                self._failed(error)
                due_at = utcnow() + timedelta(seconds=RETRY_ROUND.delay(failures))
            if due_at is None:
                return
            wait = min(MAX_SLEEP, max(0.0, (due_at - utcnow()).total_seconds()))
            if self._woken.wait(wait):
                self._woken.clear()

    def _failed(self, error: Exception) -> None:
        if readiness.is_outage(error):
            self._database.failed(error)
        else:
            log.exception("webhook delivery round failed")

    def stop(self) -> None:
        self._stopping.set()
        self._woken.set()
        self.join(timeout=15)


def delivery_thread(
    sessions: sessionmaker[Session], settings: Settings, outbox: AlertOutbox
) -> DeliveryThread:
    """The worker a hub process runs, woken by the process's `outbox`: users' webhooks, and
    the cluster's when configured."""
    hook = None
    if settings.webhook_url is not None and settings.webhook_secret is not None:
        hook = (settings.webhook_url, settings.webhook_secret)
    sender = WebhookSender(settings.fetch_allow)
    thread = DeliveryThread(Deliverer(sessions, sender.send, hook), sessions)
    outbox.listen(thread.wake)
    return thread
