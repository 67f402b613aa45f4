"""A database outage is one line when it begins and one when it ends, for the whole hub process
(API, monitor, webhook delivery), however long it lasts and however often each part retries:
no traceback, and nothing from a delivery worker that has no webhook to deliver to.

The database is cut for real (nftables drops a relay's packets: tests.component.test_database_cut),
for several lifetimes of the monitor's lock, while an autoscaler keeps asking the API.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import make_url

from blackwidow.alerts.delivery import delivery_thread
from blackwidow.app import create_app
from blackwidow.core.node_protocol import Shard
from blackwidow.models import MonitorLock, utcnow
from blackwidow.monitor.leader import lock_name
from blackwidow.monitor.loop import MonitorLoop, lock_ttl
from tests.component.conftest import hub_settings
from tests.component.test_database_cut import Cut, relayed_database  # noqa: F401 (a fixture)
from tests.support import wait_until

POLL_INTERVAL = 0.5  # the lock lives 2.5 s and is renewed every 0.6 s
OUTAGE = 6.0  # seconds cut: before, about ten tracebacks from the lock keeper alone


def _leading(sessions) -> bool:
    """The monitor holds its lock, renewed since the outage (it expires a lifetime ahead)."""
    with sessions() as session:
        lock = session.get(MonitorLock, lock_name(Shard()))
        soon = utcnow() + timedelta(seconds=lock_ttl_seconds() - 1.5)
        return bool(lock and lock.holder and lock.expires_at and lock.expires_at > soon)


def lock_ttl_seconds() -> float:
    return 3 * POLL_INTERVAL + 1


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_database_outage_is_one_line_and_its_recovery_one(
    relayed_database: str,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = hub_settings(
        relayed_database, tmp_path, database_timeout=1.0, poll_interval=POLL_INTERVAL
    )
    assert lock_ttl(settings) == lock_ttl_seconds()
    app = create_app(settings)
    hub = app.extensions["blackwidow"]
    client = app.test_client()
    threads = [
        MonitorLoop(hub.sessions, settings, hub.alerts),
        delivery_thread(hub.sessions, settings, hub.alerts),
    ]
    answers: list[int] = []
    with caplog.at_level("INFO"):
        for thread in threads:
            thread.start()
        try:
            wait_until(lambda: _leading(hub.sessions), what="the monitor to lead")
            caplog.clear()
            with Cut(int(make_url(relayed_database).port or 0)):
                cut_until = time.monotonic() + OUTAGE
                while time.monotonic() < cut_until:  # an autoscaler, asking all along
                    answers.append(client.get("/api/v1/nodes/count").status_code)
            wait_until(lambda: "database back" in caplog.text, what="the recovery's line")
            wait_until(lambda: _leading(hub.sessions), what="the monitor to lead again")
        finally:
            for thread in threads:
                thread.stop()
            with hub.sessions() as session:
                session.get_bind().dispose()
    assert 503 in answers, answers
    ours = [r for r in caplog.records if r.name.startswith("blackwidow")]
    assert not [r for r in ours if r.exc_info], "an expected outage is no traceback"
    said = [r.getMessage() for r in ours]
    assert [m for m in said if m.startswith("database down ")] == [said[0]], said
    assert len([m for m in said if m.startswith("database back after=")]) == 1, said
    assert len(said) <= 4, said  # the two, and at most the lock's lapse seen by a poll
