"""Readiness (/readyz) against a real database and store: not ready while the schema is behind
the migrations' head, the database does not answer or the store does not; the API answers a
503 `schema_behind`, not a 500, while the schema is behind. And the health detail is degraded,
with its reasons, while a suspect node holds crawlers, not after a handled death."""

from __future__ import annotations

from datetime import timedelta

from blackwidow import db, readiness
from blackwidow.alerts.delivery import delivery_thread
from blackwidow.app import create_app
from blackwidow.core.node_protocol import Shard
from blackwidow.core.store import open_store
from blackwidow.models import Assignment, Crawler, MonitorLock, Node, utcnow
from blackwidow.monitor.leader import lock_name
from blackwidow.monitor.loop import MonitorLoop
from tests.component.conftest import hub_settings
from tests.support import wait_until

NEEDS_SCHEMA = ("/api/v1/health", "/api/v1/nodes/count")


def test_not_ready_and_503_while_the_schema_is_behind_then_ready_once_migrated(
    empty_database_url, tmp_path
):
    app = create_app(hub_settings(empty_database_url, tmp_path))
    client = app.test_client()
    assert client.get("/healthz").status_code == 200  # alive all the same
    unready = client.get("/readyz")
    assert unready.status_code == 503
    assert unready.json["status"] == "not_ready"
    [reason] = unready.json["reasons"]
    assert reason.startswith("schema: ") and "blackwidow db upgrade" in reason
    for path in NEEDS_SCHEMA:
        answer = client.get(path)
        assert answer.status_code == 503, path
        assert answer.json["error"]["code"] == "schema_behind", path
        assert answer.headers["Retry-After"]
    metrics = client.get("/metrics")  # from what the process knows: SQL's figures never read
    assert metrics.status_code == 200
    assert "blackwidow_sql_figures_age_seconds +Inf" in metrics.text

    db.upgrade(empty_database_url)
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json) == (
        200,
        {"status": "ready", "role": "hub", "reasons": []},
    )
    assert client.get("/api/v1/nodes/count").status_code == 200
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()


def test_not_ready_while_the_store_does_not_answer(database_url, tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'items.db'}")
    app = create_app(hub_settings(database_url, tmp_path), store=store)
    client = app.test_client()
    assert client.get("/readyz").status_code == 200
    store.close()
    answer = client.get("/readyz")
    assert (answer.status_code, answer.json["reasons"]) == (503, ["store: does not answer"])
    with app.extensions["blackwidow"].sessions() as session:
        session.get_bind().dispose()


def test_not_ready_while_the_database_does_not_answer(tmp_path):
    # nothing listens on port 9 of loopback: every connection is refused at once
    settings = hub_settings("postgresql+psycopg://hub@127.0.0.1:9/hub", tmp_path)
    client = create_app(settings.replace(database_timeout=1.0)).test_client()
    answer = client.get("/readyz")
    assert answer.status_code == 503
    [reason] = answer.json["reasons"]
    assert reason.startswith("database: does not answer")


def _lead(sessions) -> None:
    with sessions.begin() as session:
        lock = session.get(MonitorLock, lock_name(Shard())) or MonitorLock(name=lock_name(Shard()))
        lock.holder, lock.expires_at = "host:1:a", utcnow() + timedelta(minutes=1)
        session.add(lock)
        session.add(Node(url="http://127.0.0.1:9001"))


def test_health_is_degraded_while_a_suspect_node_holds_crawlers_not_after_a_handled_death(
    client, sessions, make_user
):
    _lead(sessions)
    with sessions.begin() as session:
        session.add(Node(url="http://127.0.0.1:9002", state="dead"))
    handled = client.get("/api/v1/health").json
    assert (handled["status"], handled["reasons"]) == ("ok", [])
    assert handled["nodes"] == {"active": 1, "dead": 1}  # reported, but no reason
    user_id = make_user()["id"]
    with sessions.begin() as session:
        suspect = Node(url="http://127.0.0.1:9003", state="suspect")
        crawler = Crawler(uuid="k", user_id=user_id, name="c", source="rss", query={})
        crawler.state = "running"
        session.add_all([suspect, crawler])
        session.flush()
        session.add(Assignment(crawler_id=crawler.id, node_id=suspect.id))
    degraded = client.get("/api/v1/health").json
    assert degraded["status"] == "degraded"
    assert degraded["reasons"] == ["nodes: 1 suspect, still holding crawlers"]


def test_the_hub_s_background_threads_wait_for_the_schema_saying_so_once(
    empty_database_url, tmp_path, caplog, monkeypatch
):
    """Before `blackwidow db upgrade`, the monitor and the webhook delivery wait, with one
    warning each, rather than logging a traceback every round; once migrated, they work."""
    monkeypatch.setattr(readiness, "SCHEMA_CHECK_INTERVAL", 0.05)
    settings = hub_settings(empty_database_url, tmp_path)
    app = create_app(settings)
    sessions = app.extensions["blackwidow"].sessions
    threads = [MonitorLoop(sessions, settings, app.extensions["blackwidow"].alerts)]
    threads.append(delivery_thread(sessions, settings, app.extensions["blackwidow"].alerts))
    with caplog.at_level("INFO"):
        for thread in threads:
            thread.start()
        try:
            wait_until(
                lambda: len([r for r in caplog.records if "waiting thread=" in r.message]) >= 2,
                what="both threads to say they wait",
            )
            db.upgrade(empty_database_url)
            wait_until(lambda: _holder(sessions), what="the monitor to lead once migrated")
        finally:
            for thread in threads:
                thread.stop()
    waits = [r.message for r in caplog.records if "waiting thread=" in r.message]
    assert sorted(w.split()[1] for w in waits) == ["thread=monitor", "thread=webhook-delivery"]
    assert not [r.message for r in caplog.records if r.levelname == "ERROR"]
    sessions.kw["bind"].dispose()


def _holder(sessions) -> str | None:
    with sessions() as session:
        lock = session.get(MonitorLock, lock_name(Shard()))
        return lock and lock.holder
