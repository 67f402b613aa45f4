"""The webhook delivery worker asks the database only while rows wait: with no webhook it
never looks (a database outage then costs it nothing, not a traceback a second); when its
process's outbox commits rows it is woken and delivers them, then goes quiet again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event

from blackwidow.alerts import events
from blackwidow.alerts.delivery import delivery_thread
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.app import create_app
from blackwidow.models import Webhook
from tests.component.conftest import ADMIN, bearer, hub_settings
from tests.servers.webhook_receiver import WebhookReceiver
from tests.support import wait_until

QUIET_FOR = 2.5  # seconds watched: the worker that polled looked at the outbox every second


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_worker_asks_only_when_told_rows_wait(
    database_url: str, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    settings = hub_settings(database_url, tmp_path, fetch_allow=frozenset({"127.0.0.1"}))
    app = create_app(settings)
    sessions = app.extensions["blackwidow"].sessions
    user = app.test_client().post("/api/v1/users", json={"name": "ana"}, headers=bearer(ADMIN))
    user_id = user.json["id"]
    asked: list[str] = []
    event.listen(sessions.kw["bind"], "before_cursor_execute", lambda *a: asked.append(a[2]))
    outbox = AlertOutbox(cluster_hook=False)
    worker = delivery_thread(sessions, settings, outbox)
    worker.start()
    try:
        wait_until(lambda: asked, what="the worker's one look at start")
        _quiet(asked, "no webhook, no row: the worker does not ask", settle=True)
        with sessions.begin() as session:
            session.add(Webhook(user_id=user_id, url=f"{receiver.url}/ana", secret="s"))
        _quiet(asked, "a webhook alone is no row to deliver")
        with sessions.begin() as session:
            outbox.emit(session, [events.crawler_failed(1, user_id, "feed gone")])
        wait_until(lambda: receiver.received, what="the woken worker to deliver")
        _quiet(asked, "delivered: the worker goes quiet again", settle=True)
    finally:
        worker.stop()
        sessions.kw["bind"].dispose()
    assert [got.event()["type"] for got in receiver.received] == ["crawler.failed"]


def _quiet(asked: list[str], what: str, settle: bool = False) -> None:
    """No statement from the worker for QUIET_FOR seconds (after its round ends, `settle`)."""
    if settle:
        wait_until(lambda: _unchanged(asked, 0.5), what="the worker's last round to end")
    assert _unchanged(asked, QUIET_FOR), what


def _unchanged(asked: list[str], seconds: float) -> bool:
    before = len(asked)
    threading.Event().wait(seconds)
    return len(asked) == before
