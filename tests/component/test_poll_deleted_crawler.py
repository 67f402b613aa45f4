"""The poll half on a real database while a crawler is deleted: until the reconciler takes the
deletion, the monitor's memory still holds the crawler and its node still reports it, and
neither its statuses nor one bad row may stop the cycle recording its nodes' heartbeats."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.core.node_protocol import Cursor, Renewal, Shard
from blackwidow.models import Crawler, Node, SubscriberRun
from blackwidow.monitor.alerting import PollAlerts
from blackwidow.monitor.change_intake import Intake
from blackwidow.monitor.detector import PhiAccrualDetector, PhiSettings
from blackwidow.monitor.liveness import Liveness
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.node_client import NodeTarget
from tests.component.conftest import bearer

RUN = "a" * 32


class ScriptedNode:
    """A node's poll answers, as the test sets them: its subscribers' changed statuses."""

    def __init__(self) -> None:
        self.statuses: list[dict[str, Any]] = []
        self._seq = 0

    def poll(
        self, node: NodeTarget, since: Cursor | None, renewal: Renewal | None = None
    ) -> dict[str, Any]:
        self._seq += 1
        return {
            "cursor": f"s:{self._seq}",
            "full": False,
            "subscribers": self.statuses,
            "data_sources": [],
        }


def status(crawler_id: int, collected: int, run: str | None = RUN) -> dict[str, Any]:
    """A running subscriber's status; `run` None as a node that counts no deliveries says it."""
    counted = {} if run is None else {"run": run, "delivered": collected}
    return {"crawler_id": crawler_id, "digest": "d", "items_collected": collected, **counted}


class BrokenFlush(PollAlerts):
    """Alerts whose write fails: any row that fails the status half's transaction."""

    def flush(self, session: Session) -> None:
        raise RuntimeError("the status half's write failed")


def liveness(
    sessions: sessionmaker[Session],
    node: ScriptedNode,
    memory: ShardMemory,
    watch: PollAlerts | None = None,
    fence: Callable[[Session], None] = lambda session: None,
) -> Liveness:
    return Liveness(
        sessions,
        node,  # type: ignore[arg-type]
        PhiAccrualDetector(PhiSettings(), started_at=time.monotonic()),
        memory,
        clock=time.monotonic,
        probe_dead_for=60.0,
        watch=watch or PollAlerts(AlertOutbox(cluster_hook=False), 60.0, 100),
        fence=fence,
    )


@pytest.fixture
def running(client: FlaskClient, sessions, make_user) -> tuple[int, str, ShardMemory]:
    """A crawler, a node, and a monitor memory holding the crawler; (crawler id, user's
    token, memory)."""
    user = make_user("ana")
    body = {"name": "c", "source": "rss", "query": {"feeds": ["https://f.example/"]}}
    created = client.post("/api/v1/crawlers", json=body, headers=bearer(user["token"]))
    assert created.status_code == 201, created.json
    memory = ShardMemory()
    with sessions.begin() as session:
        session.add(Node(url="http://node:1"))
        Intake(memory, Shard()).take(session, time.time())
    return created.json["id"], user["token"], memory


def polled_at(sessions: sessionmaker[Session]) -> Any:
    with sessions() as session:
        return session.scalar(select(Node.last_polled_at))


@pytest.mark.parametrize("run", [RUN, None], ids=["with-run", "without-run"])
def test_a_status_of_a_crawler_deleted_meanwhile_is_ignored(
    client: FlaskClient, sessions, running, run: str | None
) -> None:
    crawler_id, token, memory = running
    node = ScriptedNode()
    poll = liveness(sessions, node, memory)
    node.statuses = [status(crawler_id, 3, run)]
    poll.poll_once()
    with sessions() as session:
        assert session.get(Crawler, crawler_id).items_collected == 3
    first = polled_at(sessions)

    # deleted in SQL (its runs go with it); the memory holds it until the reconciler takes
    # the change, and the node reports it, counting on, until then
    assert client.delete(f"/api/v1/crawlers/{crawler_id}", headers=bearer(token)).status_code == 204
    assert crawler_id in memory.crawlers
    node.statuses = [status(crawler_id, 5, run)]
    for _ in range(2):
        memory.polled.clear()
        poll.poll_once()
        assert memory.polled.is_set()
    assert polled_at(sessions) > first  # the node's heartbeats were recorded
    with sessions() as session:
        assert session.scalars(select(SubscriberRun)).all() == []
        assert session.get(Crawler, crawler_id) is None


def test_a_failed_status_write_keeps_the_heartbeats_and_wakes_the_reconciler(
    sessions, running
) -> None:
    crawler_id, _token, memory = running
    node = ScriptedNode()
    node.statuses = [status(crawler_id, 3)]
    broken = BrokenFlush(AlertOutbox(cluster_hook=False), 60.0, 100)
    with pytest.raises(RuntimeError):
        liveness(sessions, node, memory, broken).poll_once()
    assert polled_at(sessions) is not None
    assert memory.polled.is_set()  # the reconciler still takes crawler changes
    with sessions() as session:
        assert session.scalars(select(SubscriberRun)).all() == []
