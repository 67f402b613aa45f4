"""What the monitor decides should run, on a real database: stored credentials ride in the
specs (one SQL query per pass), and a raised budget lets stopped crawlers run again."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.core.node_protocol import Cursor, Shard
from blackwidow.models import Crawler, Node
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.poller import NodeReport
from blackwidow.monitor.reconcile import Reconciler
from blackwidow.monitor.routing import Router
from blackwidow.node_client import NodeClient
from sources.model import SubscriberSpec
from tests.component.conftest import ADMIN, bearer

NAMES = itertools.count(1)  # crawler names, unique per user as the hub wants

SECRET_TOKEN = "desired-test-bearer-token"
HORIZON = 30.0


@pytest.fixture
def node_id(sessions: sessionmaker[Session]) -> int:
    with sessions.begin() as session:
        node = Node(url="http://127.0.0.1:9")
        session.add(node)
        session.flush()
        return node.id


def create(client: FlaskClient, user: dict[str, Any], source: str, query: dict[str, Any]) -> int:
    body = {"name": f"c{next(NAMES)}", "source": source, "query": query}
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(user["token"]))
    assert response.status_code == 201, response.json
    return response.json["id"]


def specs(sessions: sessionmaker[Session], node_id: int) -> dict[int, SubscriberSpec]:
    """What a newly leading monitor would push to a node that answered running nothing."""
    memory = ShardMemory()
    memory.live = (node_id,)
    memory.reported.apply(node_id, NodeReport(Cursor("stream", 1), True, [], []))
    client = NodeClient("cluster-secret", timeout=1.0)
    reconciler = Reconciler(
        sessions,
        client,
        memory,
        Router("modulo"),
        HORIZON,
        Shard(),
        alerts=AlertOutbox(cluster_hook=False),
    )
    plan, _taken = reconciler.plan()
    return {spec.crawler_id: spec for spec in plan.pushes.get(node_id, [])}


@pytest.fixture
def statements(sessions: sessionmaker[Session]) -> Iterator[list[str]]:
    """Every SQL statement run while the test runs."""
    seen: list[str] = []
    with sessions() as session:
        engine = session.get_bind()

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def test_specs_carry_the_users_stored_credential(
    client: FlaskClient, make_user, sessions, node_id: int, statements: list[str]
) -> None:
    ana, bob = make_user("ana"), make_user("bob")
    stored = client.put(
        f"/api/v1/users/{ana['id']}/credentials/twitter/default",
        json={"bearer_token": SECRET_TOKEN},
        headers=bearer(ana["token"]),
    )
    assert stored.status_code == 201
    terms = {"terms": ["python"]}
    anas = [create(client, ana, "twitter", terms) for _ in range(3)]
    spare = create(client, ana, "twitter", {**terms, "credential": "spare"})
    bobs = create(client, bob, "twitter", terms)
    feed = create(client, ana, "rss", {"feeds": ["https://example.com/feed.xml"]})

    statements.clear()
    found = specs(sessions, node_id)
    secret = found[anas[0]].credential
    assert secret is not None and secret["bearer_token"] == SECRET_TOKEN
    assert all(found[c].credential == secret for c in anas)
    assert [found[c].credential for c in (spare, bobs, feed)] == [None, None, None]
    assert found[anas[0]].credential_owner == ana["id"]
    reading_credentials = [s for s in statements if "FROM credentials" in s]
    assert len(reading_credentials) == 1, reading_credentials
    assert SECRET_TOKEN not in repr(found[anas[0]])


def test_a_cycle_with_no_credential_source_does_not_read_credentials(
    client: FlaskClient, make_user, sessions, node_id: int, statements: list[str]
) -> None:
    create(client, make_user("ana"), "rss", {"feeds": ["https://example.com/feed.xml"]})
    statements.clear()
    assert [spec.credential for spec in specs(sessions, node_id).values()] == [None]
    assert not [s for s in statements if "FROM credentials" in s]


def test_raising_a_spent_budget_lets_the_users_crawlers_run_again(
    client: FlaskClient, make_user, sessions, node_id: int
) -> None:
    """Nothing is sticky about `limit_reached`: the monitor reads the budget every cycle."""
    ana = make_user("ana", item_limit=10)
    spent = create(client, ana, "rss", {"feeds": ["https://example.com/feed.xml"]})
    with sessions.begin() as session:  # what the monitor recorded when the budget ran out
        crawler = session.get(Crawler, spent)
        crawler.items_collected, crawler.lease, crawler.state = 10, 10, "limit_reached"
    assert specs(sessions, node_id) == {}

    raised = client.patch(
        f"/api/v1/users/{ana['id']}", json={"item_limit": 25}, headers=bearer(ADMIN)
    )
    assert raised.status_code == 200
    lease = specs(sessions, node_id)[spent].lease
    assert lease is not None and 10 < lease <= 25
