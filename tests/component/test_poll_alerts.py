"""The poll half's alert transitions on a real database: each reported once per transition."""

from __future__ import annotations

from sqlalchemy import insert, select

from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.core.node_protocol import Cursor, Shard
from blackwidow.models import Crawler, WebhookDelivery
from blackwidow.monitor.alerting import PollAlerts
from blackwidow.monitor.memory.crawlers import load
from blackwidow.monitor.poller import NodeReport


def types(sessions) -> list[str]:
    with sessions() as session:
        rows = session.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id))
        return [row.event_type for row in rows]


def watch() -> PollAlerts:
    return PollAlerts(AlertOutbox(cluster_hook=True), failing_after=60.0, holding_items=100)


def report(held: int) -> NodeReport:
    return NodeReport(Cursor("s", 1), False, [], [], held=held)


def add_crawlers(sessions, user_id: int, uuid: str, count: int) -> None:
    rows = [
        {"uuid": uuid, "user_id": user_id, "name": f"{uuid} {n}", "source": "rss", "query": {}}
        for n in range(count)
    ]
    with sessions.begin() as session:
        session.execute(insert(Crawler), rows)


def test_a_node_holding_items_is_reported_once_until_it_recovers(sessions) -> None:
    alerts, urls = watch(), {1: "http://n1", 2: "http://n2"}
    for held in [0, 100, 500, 99, 120]:
        alerts.holding({1: report(held), 2: None}, urls)
        with sessions.begin() as session:
            alerts.flush(session)
    assert types(sessions) == ["node.holding", "node.holding"]


def test_a_failing_source_is_reported_once_per_source_and_user(sessions, make_user) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    add_crawlers(sessions, ana["id"], "key-1", 2)
    add_crawlers(sessions, bob["id"], "key-1", 1)
    with sessions() as session:
        crawlers = load(session, Shard())
    alerts = watch()
    for crawler in crawlers.values():
        crawler.failing = True
        alerts.failing(crawler.id, True, now=0.0)
    for now in [30.0, 60.0, 90.0]:
        alerts.failing_due(crawlers, now)
        with sessions.begin() as session:
            alerts.flush(session)
    with sessions() as session:
        bodies = [row.body for row in session.scalars(select(WebhookDelivery))]
    assert types(sessions) == ["source.failing", "source.failing"]
    assert sorted(b.count('"crawler_ids"') for b in bodies) == [1, 1]

    first = next(iter(crawlers.values()))
    first.failing = False
    alerts.failing(first.id, False, now=100.0)
    first.failing = True
    alerts.failing(first.id, True, now=110.0)
    alerts.failing_due(crawlers, 200.0)  # failing again past the threshold: a new transition
    with sessions.begin() as session:
        alerts.flush(session)
    assert len(types(sessions)) == 3


def test_budget_crossings_are_judged_against_the_stored_totals(sessions, make_user) -> None:
    ana = make_user("ana", item_limit=100)
    add_crawlers(sessions, ana["id"], "key-1", 2)
    with sessions.begin() as session:
        session.execute(Crawler.__table__.update().values(items_collected=40))  # 80 in all
    alerts = watch()
    alerts.counted(ana["id"], 5)
    with sessions.begin() as session:
        alerts.budgets(session, {ana["id"]: 100})  # 80 -> 85: nothing
        alerts.flush(session)
    alerts.counted(ana["id"], 25)
    with sessions.begin() as session:
        alerts.budgets(session, {ana["id"]: 100})  # 80 -> 105 (the write comes after)
        alerts.flush(session)
    assert types(sessions) == ["budget.warning", "budget.exhausted"]
