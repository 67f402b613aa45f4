"""Alert delivery on a real database to a real local receiver: signed bodies, retries on the
backoff schedule (time stepped by hand, never slept), one event id across retries, and each
user's webhooks seeing only that user's events."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.alerts import events
from blackwidow.alerts.delivery import KEEP, Deliverer
from blackwidow.alerts.history import recent
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.alerts.sender import WebhookSender
from blackwidow.models import Webhook, WebhookDelivery, utcnow
from sources.backoff import Backoff
from tests.servers.webhook_receiver import WebhookReceiver

CLUSTER_SECRET = "cluster-hook-secret"
RETRY = Backoff(first=10.0, cap=40.0)
ATTEMPTS = 4
LOOPBACK = frozenset({"127.0.0.1"})


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


def deliverer(
    sessions: sessionmaker[Session], receiver: WebhookReceiver, allow: frozenset[str] = LOOPBACK
) -> Deliverer:
    hook = (f"{receiver.url}/cluster", CLUSTER_SECRET)
    return Deliverer(sessions, WebhookSender(allow).send, hook, RETRY, ATTEMPTS)


def add_hook(sessions: sessionmaker[Session], user_id: int, url: str, secret: str) -> int:
    with sessions.begin() as session:
        hook = Webhook(user_id=user_id, url=url, secret=secret)
        session.add(hook)
        session.flush()
        return hook.id


def emit(sessions: sessionmaker[Session], *emitted: events.Event, cluster: bool = True) -> None:
    with sessions.begin() as session:
        AlertOutbox(cluster_hook=cluster).emit(session, emitted)


def expected_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_a_delivery_is_signed_over_the_raw_body(sessions, receiver, make_user) -> None:
    emit(sessions, events.node_dead(3, "http://10.0.0.3:8001"))
    assert deliverer(sessions, receiver).deliver_due(utcnow()) == 1
    [got] = receiver.received
    assert got.path == "/cluster"
    assert got.headers["X-Blackwidow-Signature"] == expected_signature(CLUSTER_SECRET, got.body)
    assert got.headers["Content-Type"] == "application/json"
    body = got.event()
    assert (body["type"], body["node_id"], body["url"]) == ("node.dead", 3, "http://10.0.0.3:8001")
    assert set(body) == {"id", "type", "at", "node_id", "url"}


def test_failures_are_retried_on_the_backoff_schedule_with_one_event_id(sessions, receiver) -> None:
    receiver.fail_first = 2
    emit(sessions, events.node_back(1, "http://n1"))
    worker, start = deliverer(sessions, receiver), utcnow()

    def after(seconds: float) -> int:
        return worker.deliver_due(start + timedelta(seconds=seconds))

    assert after(0) == 1  # 500: next in 10 s
    assert after(9.9) == 0
    assert after(10) == 1  # 500: next 20 s after that
    assert after(29.9) == 0
    assert after(30) == 1  # 204
    assert after(10_000) == 0
    bodies = [r.body for r in receiver.received]
    assert len(bodies) == 3 and len(set(bodies)) == 1  # the same bytes, so the same id
    with sessions() as session:
        [row] = recent(session, None, 10)
    assert (row.status, row.attempts, row.last_status) == ("delivered", 3, 204)


def test_a_delivery_gives_up_after_its_attempts(sessions, receiver) -> None:
    receiver.fail_first = 100
    emit(sessions, events.node_dead(1, "http://n1"))
    worker, now = deliverer(sessions, receiver), utcnow()
    for _ in range(ATTEMPTS + 2):
        worker.deliver_due(now)
        now += timedelta(seconds=RETRY.cap)
    assert len(receiver.received) == ATTEMPTS
    with sessions() as session:
        [row] = recent(session, None, 10)
    assert (row.status, row.last_status, row.next_attempt_at) == ("failed", 500, None)


def test_a_users_webhook_sees_only_that_users_events(sessions, receiver, make_user) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    add_hook(sessions, ana["id"], f"{receiver.url}/ana", "ana-secret-1")
    add_hook(sessions, bob["id"], f"{receiver.url}/bob", "bob-secret-1")
    emit(
        sessions,
        events.crawler_failed(11, ana["id"], "refused"),
        events.crawler_failed(22, bob["id"], "refused"),
        events.budget_crossings(bob["id"], 10, 9, 10)[0],
        events.node_dead(1, "http://n1"),
    )
    deliverer(sessions, receiver).deliver_due(utcnow())

    assert [(e["type"], e["crawler_id"]) for e in receiver.events("/ana")] == [
        ("crawler.failed", 11)
    ]
    assert [e["type"] for e in receiver.events("/bob")] == ["crawler.failed", "budget.exhausted"]
    assert receiver.events("/bob")[0]["crawler_id"] == 22
    assert len(receiver.events("/cluster")) == 4  # the cluster's webhook gets everything
    for got in receiver.received:
        secret = {"/ana": "ana-secret-1", "/bob": "bob-secret-1"}.get(got.path, CLUSTER_SECRET)
        assert got.headers["X-Blackwidow-Signature"] == expected_signature(secret, got.body)
    with sessions() as session:
        assert {d.event_type for d in recent(session, ana["id"], 10)} == {"crawler.failed"}
        assert len(recent(session, bob["id"], 10)) == 2


def test_a_webhook_on_a_private_address_is_refused_at_delivery(sessions, receiver) -> None:
    emit(sessions, events.node_dead(1, "http://n1"))
    deliverer(sessions, receiver, allow=frozenset()).deliver_due(utcnow())
    assert receiver.received == []
    with sessions() as session:
        [row] = recent(session, None, 10)
    assert row.status == "pending" and "loopback" in (row.last_error or "")


def test_finished_deliveries_are_kept_bounded_per_webhook(sessions, receiver) -> None:
    emit(sessions, *[events.node_dead(n, "http://n") for n in range(KEEP + 5)])
    worker = deliverer(sessions, receiver)
    while worker.deliver_due(utcnow()):
        pass
    with sessions() as session:
        kept = session.scalars(select(WebhookDelivery.status)).all()
    assert len(receiver.received) == KEEP + 5
    assert len(kept) == KEEP and set(kept) == {"delivered"}


def test_without_a_cluster_webhook_only_users_hooks_get_rows(sessions, make_user) -> None:
    ana = make_user("ana")
    emit(sessions, events.node_dead(1, "http://n1"), cluster=False)
    emit(sessions, events.crawler_failed(1, ana["id"], None), cluster=False)  # ana has no hook
    with sessions() as session:
        assert session.scalars(select(WebhookDelivery)).all() == []
