"""A push that gets no answer, on a real database: its node may have taken the crawler and the
lease sent, so a budgeted crawler keeps that lease counted and is pushed nowhere until the
lease would have lapsed, as a lost node's crawlers are (docs/architecture.md: Exact limits)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.core.node_protocol import Cursor
from blackwidow.models import Crawler
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.poller import NodeReport
from blackwidow.node_client import NodeTarget
from tests.component.conftest import bearer, make_reconciler


@pytest.fixture
def silent_node() -> Iterator[str]:
    """A node's address that takes every request and never answers (a network cut mid-call)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_budgeted_crawler_whose_push_got_no_answer_keeps_its_lease_and_waits(
    client: FlaskClient, make_user, sessions: sessionmaker[Session], silent_node: str
) -> None:
    user = make_user("ana", item_limit=40)
    body = {"name": "c", "source": "rss", "query": {"feeds": ["https://f.example/feed.xml"]}}
    crawler_id = client.post("/api/v1/crawlers", json=body, headers=bearer(user["token"])).json[
        "id"
    ]
    memory = ShardMemory(lease_after=5.0)
    memory.live, memory.capacity = (1,), {1: 1}
    memory.reported.apply(1, NodeReport(Cursor("s", 1), True, [], []))  # it answered: runs nothing
    reconciler = make_reconciler(sessions, memory)

    target = {1: NodeTarget(1, silent_node, 1)}
    reconciler.reconcile_once(target)  # a new leader: it holds what no node reported yet
    crawler = memory.crawlers[crawler_id]
    crawler.lost_until = None  # as a poll does that counts it from the store

    reconciler.reconcile_once(target)

    assert crawler.lease > 0 and crawler.lost_until is not None
    with sessions() as session:
        assert session.get(Crawler, crawler_id).lease == crawler.lease
    plan, _taken = reconciler.plan()
    assert plan.pushes == {}  # not sent again, there or elsewhere, while the lease may run
