"""Leadership changing hands on a real database: a new leader's first polls, heard before its
crawlers are read, are asked for again, so a count stored during the hand-over is never left
behind; and a leader that lost its lock writes nothing, however late its transaction runs."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.core.node_protocol import Cursor, Renewal, Shard
from blackwidow.models import Crawler, Node, utcnow
from blackwidow.monitor import leader
from blackwidow.monitor.change_intake import Intake
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.node_client import NodeTarget
from tests.component.conftest import bearer, make_reconciler
from tests.component.test_poll_deleted_crawler import BrokenFlush, liveness, status


class ChangeLogNode:
    """A node's poll answers with its change cursor: everything when asked without a cursor,
    else only the statuses changed after the cursor named."""

    def __init__(self) -> None:
        self._changes: list[tuple[int, dict[str, Any]]] = []  # (sequence, status)

    def count(self, crawler_id: int, collected: int) -> None:
        self._changes.append((len(self._changes) + 1, status(crawler_id, collected)))

    def poll(
        self, node: NodeTarget, since: Cursor | None, renewal: Renewal | None = None
    ) -> dict[str, Any]:
        after = 0 if since is None else since.seq
        latest = {s["crawler_id"]: s for seq, s in self._changes if seq > after}
        return {
            "cursor": f"log:{len(self._changes)}",
            "full": since is None,
            "subscribers": list(latest.values()),
            "data_sources": [],
        }


def collected(sessions: sessionmaker[Session], crawler_id: int) -> int:
    with sessions() as session:
        return session.get(Crawler, crawler_id).items_collected


def delivered(sessions: sessionmaker[Session], crawler_id: int) -> int:
    with sessions() as session:
        return session.get(Crawler, crawler_id).items_delivered


@pytest.fixture
def crawler_id(client, sessions, make_user) -> int:
    """A crawler, and a node to poll."""
    token = make_user("ana")["token"]
    body = {"name": "c", "source": "rss", "query": {"feeds": ["https://f.example/"]}}
    created = client.post("/api/v1/crawlers", json=body, headers=bearer(token))
    with sessions.begin() as session:
        session.add(Node(url="http://node:1"))
    return created.json["id"]


def test_a_count_polled_before_the_crawlers_are_read_is_taken_after(sessions, crawler_id) -> None:
    node = ChangeLogNode()
    node.count(crawler_id, 12)  # stored between the old leader's last poll and this one's first

    memory = ShardMemory()  # a new leader: its poll thread starts before its intake reads
    poll = liveness(sessions, node, memory)
    poll.poll_once()
    with sessions.begin() as session:
        Intake(memory, Shard()).take(session, time.time())
    poll.poll_once()
    assert collected(sessions, crawler_id) == 12


def take_lock(sessions: sessionmaker[Session], holder: str, after: float = 0.0) -> int | None:
    with sessions.begin() as session:
        at = utcnow() + timedelta(seconds=after)
        return leader.try_lead(session, holder, at, 10.0, leader.LOCK)


def fenced(holder: str, epoch: int | None) -> Callable[[Session], None]:
    assert epoch is not None
    return functools.partial(leader.fence, name=leader.LOCK, holder=holder, epoch=epoch)


def test_a_leader_whose_lock_was_taken_over_records_no_statuses(sessions, crawler_id) -> None:
    memory = ShardMemory()
    with sessions.begin() as session:
        Intake(memory, Shard()).take(session, time.time())
    node = ChangeLogNode()
    stale = liveness(sessions, node, memory, fence=fenced("a", take_lock(sessions, "a")))
    node.count(crawler_id, 18)
    stale.poll_once()
    assert collected(sessions, crawler_id) == 18

    # cut off from the database past its lock's lifetime; another hub took over and counted
    successor = fenced("b", take_lock(sessions, "b", after=60))
    node.count(crawler_id, 11)  # what the cut-off leader still believes, written after the heal
    with pytest.raises(leader.LeadLost):
        stale.poll_once()
    assert collected(sessions, crawler_id) == 18
    with sessions.begin() as session:
        successor(session)  # the new holder's transactions go through


def test_statuses_whose_write_failed_are_written_once_when_heard_again(sessions, crawler_id):
    """A cut from the database, a lost lock: the memory must not keep what SQL did not."""
    memory = ShardMemory()
    with sessions.begin() as session:
        Intake(memory, Shard()).take(session, time.time())
    node = ChangeLogNode()
    node.count(crawler_id, 12)
    with pytest.raises(RuntimeError):
        liveness(
            sessions, node, memory, BrokenFlush(AlertOutbox(cluster_hook=False), 60.0, 100)
        ).poll_once()
    liveness(sessions, node, memory).poll_once()
    assert (collected(sessions, crawler_id), delivered(sessions, crawler_id)) == (12, 12)


def test_what_a_failed_pass_settled_is_recorded_by_the_next(client, sessions, make_user) -> None:
    token = make_user("ana")["token"]
    window = {"cron": "0 0 1 1 *", "for": 60}  # new year's first minute, UTC
    body = {"name": "c", "source": "rss", "query": {"feeds": ["https://f.example/"]}}
    created = client.post(
        "/api/v1/crawlers", json={**body, "schedule": window}, headers=bearer(token)
    )
    crawler_id = created.json["id"]
    lost, wall = [False], [datetime(2026, 12, 31, 23, 59, tzinfo=UTC).timestamp()]

    def fence(session: Session) -> None:
        if lost[0]:
            raise leader.LeadLost("cut off")

    reconciler = make_reconciler(sessions, ShardMemory(), wall=lambda: wall[0], fence=fence)
    reconciler.reconcile_once({})  # before its window: scheduled
    wall[0] += 70  # the window opens: pending, with no node to take it
    lost[0] = True
    with pytest.raises(leader.LeadLost):
        reconciler.reconcile_once({})
    lost[0] = False
    reconciler.reconcile_once({})
    with sessions() as session:
        assert session.get(Crawler, crawler_id).state == "pending"
