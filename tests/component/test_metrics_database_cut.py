"""A hub cut off from PostgreSQL still answers `/metrics` (200): its database down, its store
up, and the cluster's figures from its last read of SQL, saying how old they are and aging as
they would (a leader whose lease ran out meanwhile is shown without it). Once the network
heals, it reads them afresh.

The cut is the kernel's, as in tests/component/test_database_cut.py."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import make_url

from blackwidow.app import create_app
from blackwidow.core.node_protocol import Shard
from blackwidow.models import utcnow
from blackwidow.monitor import leader
from tests.component.conftest import hub_settings
from tests.component.test_database_cut import Cut, relayed_database  # noqa: F401 (a fixture)
from tests.component.test_hub_metrics import value
from tests.support import wait_until

LEASE = 3.0  # seconds the shard's leader holds its lock before the cut; it can renew no more


def _scraped(app: Flask) -> dict:
    """A scrape (200), asked from a thread of its own: a hung one fails the wait, not the
    suite."""
    answers: list = []
    ask = threading.Thread(
        target=lambda: answers.append(app.test_client().get("/metrics")), daemon=True
    )
    ask.start()
    (response,) = wait_until(lambda: answers, timeout=30, what="a scrape's answer")
    assert response.status_code == 200, response.data
    return {f.name: f for f in text_string_to_metric_families(response.get_data(as_text=True))}


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_metrics_answer_from_what_the_hub_knows_while_its_database_is_cut(
    relayed_database: str,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    app = create_app(hub_settings(relayed_database, tmp_path, database_timeout=1.0))
    sessions = app.extensions["blackwidow"].sessions
    with sessions.begin() as session:
        leader.try_lead(session, "hub-a", utcnow(), LEASE, leader.lock_name(Shard()))
        leader.record_cycle(session, "hub-a", utcnow(), 0.1, leader.lock_name(Shard()))
    before = _scraped(app)
    assert value(before, "blackwidow_database_up") == 1
    assert value(before, "blackwidow_shard_leader", shard="0/1") == 1
    try:
        with Cut(int(make_url(relayed_database).port or 0)):
            cut = _scraped(app)
            assert value(cut, "blackwidow_database_up") == 0
            assert value(cut, "blackwidow_store_up") == 1  # the store is not the database
            assert 0 < value(cut, "blackwidow_sql_figures_age_seconds") < math.inf
            # the last read's figures, still served
            assert value(cut, "blackwidow_crawlers", state="pending") == 0
            assert "blackwidow_monitor_cycle_seconds" in cut
            # and judged as of the scrape: the lease ran out, the last cycle grew old
            later = wait_until(
                lambda: (
                    (f := _scraped(app))
                    and value(f, "blackwidow_shard_leader", shard="0/1") == 0
                    and f
                ),
                timeout=30,
                what="the leader's lease shown lapsed",
            )
            assert value(later, "blackwidow_database_up") == 0
            assert value(later, "blackwidow_shard_last_cycle_age_seconds", shard="0/1") >= LEASE
            assert value(later, "blackwidow_sql_figures_age_seconds") > value(
                cut, "blackwidow_sql_figures_age_seconds"
            )
        healed = wait_until(
            lambda: (f := _scraped(app)) and value(f, "blackwidow_database_up") == 1 and f,
            timeout=30,
            what="the database read again after the heal",
        )
        assert value(healed, "blackwidow_sql_figures_age_seconds") < value(
            later, "blackwidow_sql_figures_age_seconds"
        )
    finally:
        with sessions() as session:
            session.get_bind().dispose()
