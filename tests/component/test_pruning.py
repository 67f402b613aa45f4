"""The hub's housekeeping on each back end: what no longer matters goes, nothing else does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db, usage
from blackwidow.models import Crawler, Node, SourceRun, SubscriberRun, User, utcnow
from blackwidow.monitor import billing, pruning

DAY = timedelta(days=1)


@pytest.fixture
def sessions(database_url: str) -> Iterator[sessionmaker[Session]]:
    engine = db.make_engine(database_url)
    yield db.make_sessions(engine)
    engine.dispose()


def test_dead_nodes_go_once_silent_past_retention_and_no_others(sessions):
    now = utcnow()
    long_ago, lately = now - 2 * DAY, now - DAY / 2
    nodes = {
        "dead-long-ago": ("dead", long_ago, long_ago),
        "dead-never-polled": ("dead", long_ago, None),
        "dead-lately": ("dead", long_ago, lately),
        "dead-just-registered": ("dead", lately, None),
        "suspect-long-ago": ("suspect", long_ago, long_ago),
        "active-long-ago": ("active", long_ago, long_ago),
    }
    with sessions.begin() as session:
        for name, (state, registered_at, polled_at) in nodes.items():
            session.add(
                Node(
                    url=f"http://{name}:1",
                    state=state,
                    registered_at=registered_at,
                    last_polled_at=polled_at,
                )
            )

    with sessions.begin() as session:
        assert pruning.forget_dead_nodes(session, now - DAY) == 2

    with sessions() as session:
        left = set(session.scalars(select(Node.url)))
    assert left == {
        f"http://{name}:1" for name in nodes if name not in ("dead-long-ago", "dead-never-polled")
    }


def test_runs_go_once_their_node_can_no_longer_report_them_and_totals_stay(sessions):
    with sessions.begin() as session:
        user = User(name="ana", token_hash="0" * 64)
        node = Node(url="http://node:1", generation=5)
        session.add_all([user, node])
        session.flush()
        crawler = Crawler(user_id=user.id, uuid="k", name="c", source="rss", query={"feeds": []})
        session.add(crawler)
        session.flush()
        heard = {  # run -> the node and generation it was reported from
            "current": billing.Origin(node.id, 5),
            "one-back": billing.Origin(node.id, 4),  # a poll recorded just after a bump
            "two-back": billing.Origin(node.id, 3),
            "deleted-node": billing.Origin(node.id + 1000, 9),
            "unknown": None,
        }
        runs: dict = {}
        for run, origin in heard.items():
            status = {"crawler_id": crawler.id, "run": run, "delivered": 10}
            billing.record(session, runs, crawler, status, origin)
        ids = (crawler.id, node.id)

    with sessions.begin() as session:  # all grew just now: a restart could replay them
        assert pruning.forget_finished_runs(session, grown_before=utcnow() - DAY) == 0
    with sessions.begin() as session:
        assert pruning.forget_finished_runs(session, grown_before=utcnow() + DAY) == 2

    with sessions() as session:
        assert set(session.scalars(select(SubscriberRun.run))) == {"current", "one-back", "unknown"}
        assert session.get(Crawler, ids[0]).items_delivered == 50  # the total is folded in
        session.get(Node, ids[1]).generation = 6
        session.commit()
    with sessions.begin() as session:
        assert pruning.forget_finished_runs(session, grown_before=utcnow() + DAY) == 1
    with sessions() as session:
        assert set(session.scalars(select(SubscriberRun.run))) == {"current", "unknown"}


def test_source_runs_go_like_subscriber_runs_and_the_billed_totals_stay(sessions):
    with sessions.begin() as session:
        user = User(name="ana", token_hash="0" * 64)
        node = Node(url="http://node:1", generation=5)
        session.add_all([user, node])
        session.flush()
        heard = {
            "current": billing.Origin(node.id, 5),
            "two-back": billing.Origin(node.id, 3),
            "unknown": None,
        }
        reports = [
            (origin, {"run": run, "source": "datasift", "delivered": {str(user.id): 10}})
            for run, origin in heard.items()
        ]
        billing.record_sources(session, reports)
        user_id = user.id

    with sessions.begin() as session:
        assert pruning.forget_finished_runs(session, grown_before=utcnow() - DAY) == 0
        assert pruning.forget_finished_runs(session, grown_before=utcnow() + DAY) == 1

    with sessions() as session:
        assert set(session.scalars(select(SourceRun.run))) == {"current", "unknown"}
        assert usage.billed(session, user_id) == {"datasift": 30}
    with sessions.begin() as session:  # a kept run heard again bills nothing more
        billing.record_sources(session, reports[:1])
    with sessions() as session:
        assert usage.billed(session, user_id) == {"datasift": 30}
