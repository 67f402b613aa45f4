"""Delivered accounting on a real database: each delivered item is counted once per crawler,
and once per user for what a shared data source delivered, however often a run is heard,
across hub restarts and while two nodes report one crawler."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import usage
from blackwidow.models import Crawler, SourceRun, SubscriberRun, User
from blackwidow.monitor import billing
from tests.support import wait_until

OLD_RUN, NEW_RUN = "a" * 32, "b" * 32


def status(crawler_id: int, run: Any, delivered: Any) -> dict[str, Any]:
    return {"crawler_id": crawler_id, "run": run, "delivered": delivered, "items_collected": 0}


@pytest.fixture
def two_crawlers(sessions: sessionmaker[Session]) -> tuple[int, int]:
    with sessions.begin() as session:
        user = User(name="ana", token_hash="0" * 64)
        session.add(user)
        session.flush()
        crawlers = [
            Crawler(user_id=user.id, uuid="k", name=name, source="rss", query={"feeds": []})
            for name in ("one", "two")
        ]
        session.add_all(crawlers)
        session.flush()
        return crawlers[0].id, crawlers[1].id


def poll(sessions: sessionmaker[Session], statuses: Iterable[dict[str, Any]]) -> None:
    """What one monitor cycle does with one node's answer, in its own transaction and knowing
    only what SQL holds: each poll here is as if the hub had restarted since the last."""
    statuses = list(statuses)
    with sessions.begin() as session:
        runs = billing.known_runs(session, statuses)
        for reported in statuses:
            crawler = session.get(Crawler, reported["crawler_id"])
            billing.record(session, runs, crawler, reported)


def delivered(sessions: sessionmaker[Session], crawler_id: int) -> int:
    with sessions() as session:
        return session.get(Crawler, crawler_id).items_delivered


def test_a_run_counts_only_its_growth(sessions, two_crawlers) -> None:
    one, _ = two_crawlers
    for count, total in [(5, 5), (5, 5), (12, 12), (9, 12), (12, 12), (20, 20)]:
        poll(sessions, [status(one, OLD_RUN, count)])
        assert delivered(sessions, one) == total
    with sessions() as session:
        assert session.get(SubscriberRun, OLD_RUN).delivered == 20


def test_a_new_run_counts_from_zero_and_old_runs_stay_counted(sessions, two_crawlers) -> None:
    """A subscriber created again (node restart, move, spec change that needs a new one)."""
    one, _ = two_crawlers
    poll(sessions, [status(one, OLD_RUN, 30)])
    poll(sessions, [status(one, NEW_RUN, 4)])
    poll(sessions, [status(one, NEW_RUN, 10)])
    assert delivered(sessions, one) == 40


def test_two_nodes_reporting_one_crawler_during_a_move(sessions, two_crawlers) -> None:
    one, _ = two_crawlers
    for old, new in [(30, 0), (31, 2), (31, 8), (31, 8)]:
        poll(sessions, [status(one, OLD_RUN, old)])  # the node it leaves
        poll(sessions, [status(one, NEW_RUN, new)])  # the node it moves to
    assert delivered(sessions, one) == 39


def test_the_same_run_twice_in_one_answer_is_counted_once(sessions, two_crawlers) -> None:
    one, _ = two_crawlers
    poll(sessions, [status(one, OLD_RUN, 7), status(one, OLD_RUN, 7)])
    assert delivered(sessions, one) == 7


def test_a_run_claimed_by_another_crawler_is_ignored(sessions, two_crawlers) -> None:
    one, two = two_crawlers
    poll(sessions, [status(one, OLD_RUN, 7)])
    poll(sessions, [status(two, OLD_RUN, 50)])
    assert (delivered(sessions, one), delivered(sessions, two)) == (7, 0)


@pytest.mark.parametrize(
    ("run", "count"),
    [
        (None, 5),
        (OLD_RUN, None),
        ("", 5),
        ("x" * 33, 5),
        (7, 5),
        (OLD_RUN, -1),
        (OLD_RUN, True),
        (OLD_RUN, "5"),
        (OLD_RUN, 5.0),
        (OLD_RUN, 2**31),
    ],
)
def test_unusable_reports_count_nothing(sessions, two_crawlers, run: Any, count: Any) -> None:
    one, _ = two_crawlers
    poll(sessions, [status(one, run, count)])
    assert delivered(sessions, one) == 0
    with sessions() as session:
        assert session.scalars(select(SubscriberRun)).all() == []


def test_runs_go_with_their_crawler(sessions, two_crawlers) -> None:
    one, two = two_crawlers
    poll(sessions, [status(one, OLD_RUN, 3), status(two, NEW_RUN, 4)])
    with sessions.begin() as session:
        session.delete(session.get(Crawler, one))
    with sessions() as session:
        assert session.scalars(select(SubscriberRun.run)).all() == [NEW_RUN]


def source_report(run: str, source: str, by_user: dict[Any, Any]) -> dict[str, Any]:
    return {"key": "k", "source": source, "subscribers": 3, "run": run, "delivered": by_user}


def billed(sessions: sessionmaker[Session], user_id: int) -> dict[str, int]:
    with sessions() as session:
        return usage.billed(session, user_id)


def record_sources(sessions: sessionmaker[Session], reports: list[dict[str, Any]]) -> None:
    with sessions.begin() as session:
        billing.record_sources(session, [(None, report) for report in reports])


def test_a_shared_source_bills_each_user_once_per_item(sessions, two_crawlers) -> None:
    with sessions() as session:
        ana = session.scalar(select(User.id))
    record_sources(sessions, [source_report(OLD_RUN, "datasift", {str(ana): 10})])
    record_sources(sessions, [source_report(OLD_RUN, "datasift", {str(ana): 25})])
    record_sources(sessions, [source_report(OLD_RUN, "datasift", {str(ana): 20})])  # late echo
    record_sources(sessions, [source_report(NEW_RUN, "datasift", {str(ana): 5})])  # a move
    assert billed(sessions, ana) == {"datasift": 30}


@pytest.mark.parametrize(
    "report",
    [
        {"run": "", "source": "rss", "delivered": {"1": 3}},
        {"run": "x" * 33, "source": "rss", "delivered": {"1": 3}},
        {"run": OLD_RUN, "source": None, "delivered": {"1": 3}},
        {"run": OLD_RUN, "source": "rss", "delivered": [3]},
        {"run": OLD_RUN, "source": "rss", "delivered": {"one": 3}},
        {"run": OLD_RUN, "source": "rss", "delivered": {"1": -1}},
        {"run": OLD_RUN, "source": "rss", "delivered": {"1": True}},
        {"run": OLD_RUN, "source": "rss", "delivered": {"999999": 3}},  # no such user
    ],
)
def test_unusable_source_reports_bill_nothing(sessions, two_crawlers, report) -> None:
    record_sources(sessions, [report])
    with sessions() as session:
        assert session.scalar(select(SourceRun.run)) is None


def waiting_on_a_lock(sessions: sessionmaker[Session]) -> bool:
    with sessions() as session:
        return bool(session.scalar(text("SELECT count(*) FROM pg_locks WHERE NOT granted")))


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_shard_leaders_billing_one_user_at_once_lose_no_growth(sessions, two_crawlers) -> None:
    """Each leader bills its own shard's data sources; both add to the user's one total."""
    with sessions() as session:
        ana = str(session.scalar(select(User.id)))
    record_sources(sessions, [source_report(OLD_RUN, "datasift", {ana: 1})])
    first = sessions()
    first.begin()
    billing.record_sources(first, [(None, source_report(OLD_RUN, "datasift", {ana: 11}))])
    other = threading.Thread(
        target=record_sources, args=(sessions, [source_report(NEW_RUN, "datasift", {ana: 7})])
    )
    other.start()  # the other shard's leader, while the first has not committed
    wait_until(lambda: not other.is_alive() or waiting_on_a_lock(sessions), what="the other bill")
    first.commit()
    first.close()
    other.join(timeout=30)
    assert billed(sessions, int(ana)) == {"datasift": 18}
