"""Leaving is not dying, on the real app and database: a node's leave call (the cluster
secret, idempotent, fenced by its generation), the poll half finding a leaving node gone as
`left` with node.left rather than node.dead, health and the count that ignore it, and the
admin's removal of a dead node by REST and by the cluster page's form."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.core.node_protocol import Shard
from blackwidow.models import AlertEvent, MonitorLock, Node, utcnow
from blackwidow.monitor.alerting import PollAlerts
from blackwidow.monitor.detector import PhiAccrualDetector, PhiSettings
from blackwidow.monitor.leader import lock_name
from blackwidow.monitor.liveness import Liveness
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.node_client import NodeClient
from tests.component.conftest import ADMIN, SECRET, bearer
from tests.component.test_dashboard import csrf_of, sign_in


def register(client: FlaskClient, url: str) -> dict[str, Any]:
    answer = client.post("/api/v1/nodes", json={"url": url}, headers=bearer(SECRET))
    assert answer.status_code == 201, answer.json
    return answer.json


def leave(client: FlaskClient, node_id: int, generation: int) -> Any:
    body = {"generation": generation}
    return client.post(f"/api/v1/nodes/{node_id}/leave", json=body, headers=bearer(SECRET))


def state_of(sessions: sessionmaker[Session], node_id: int) -> str | None:
    with sessions() as session:
        return session.scalar(select(Node.state).where(Node.id == node_id))


def events(sessions: sessionmaker[Session]) -> list[str]:
    with sessions() as session:
        return list(session.scalars(select(AlertEvent.event_type).order_by(AlertEvent.id)))


def test_a_node_says_it_leaves_once_or_twice_in_its_own_generation(
    client, sessions, serve_node
) -> None:
    node = register(client, serve_node())
    stale = leave(client, node["id"], node["generation"] - 1)
    assert stale.status_code == 409 and stale.json["error"]["field"] == "generation"
    assert leave(client, 999, 1).status_code == 404
    for _ in range(2):
        answer = leave(client, node["id"], node["generation"])
        assert (answer.status_code, answer.json) == (200, {"id": node["id"], "state": "leaving"})
    bad = client.post(f"/api/v1/nodes/{node['id']}/leave", json={}, headers=bearer(SECRET))
    assert bad.status_code == 422 and bad.json["error"]["field"] == "generation"
    # going: not active for the autoscaler, and no reason for health to be degraded
    assert client.get("/api/v1/nodes/count").json["active"] == 0
    assert state_of(sessions, node["id"]) == "leaving"


def poll_half(sessions: sessionmaker[Session]) -> Liveness:
    """Shard 0's poll half on this database: it judges the nodes."""
    return Liveness(
        sessions,
        NodeClient("cluster-secret", timeout=0.5),
        PhiAccrualDetector(PhiSettings(), started_at=time.monotonic()),
        ShardMemory(),
        clock=time.monotonic,
        probe_dead_for=60.0,
        watch=PollAlerts(AlertOutbox(cluster_hook=False), 60.0, 100),
    )


def lead(sessions: sessionmaker[Session]) -> None:
    """A monitor leader's lock row, so health has no reason of its own to be degraded."""
    with sessions.begin() as session:
        name = lock_name(Shard())
        lock = session.get(MonitorLock, name) or MonitorLock(name=name)
        lock.holder, lock.expires_at = "host:1:a", utcnow() + timedelta(minutes=1)
        session.add(lock)


def test_a_leaving_node_that_stops_answering_has_left_not_died(
    client, sessions, serve_node
) -> None:
    lead(sessions)
    urls = serve_node(), serve_node()
    leaving, silent = (register(client, url) for url in urls)
    assert leave(client, leaving["id"], leaving["generation"]).status_code == 200
    for url in urls:
        serve_node.stop(url)  # both stop: every poll is refused at once
    poll_half(sessions).poll_once()  # both refused: one said it was leaving

    assert state_of(sessions, leaving["id"]) == "left"  # at once: no failure-detection gap
    assert state_of(sessions, silent["id"]) == "active"  # one failed poll is no death
    assert events(sessions) == ["node.left"]
    health = client.get("/api/v1/health").json
    assert (health["status"], health["reasons"]) == ("ok", [])
    listed = client.get("/api/v1/nodes", headers=bearer(ADMIN)).json
    assert {n["id"]: n["state"] for n in listed}[leaving["id"]] == "left"
    # a new process at the address registers anew, with no node.back: nothing had died
    again = serve_node(port=int(urls[0].rsplit(":", 1)[1]))
    assert register(client, again)["id"] == leaving["id"]
    assert events(sessions) == ["node.left"]


def dead_node(client: FlaskClient, sessions: sessionmaker[Session], url: str) -> int:
    node = register(client, url)
    with sessions.begin() as session:
        session.get(Node, node["id"]).state = "dead"
    return node["id"]


def test_the_admin_removes_a_dead_node_not_a_live_one(
    client, sessions, make_user, serve_node
) -> None:
    live = register(client, serve_node())["id"]
    dead = dead_node(client, sessions, serve_node())
    refused = client.delete(f"/api/v1/nodes/{live}", headers=bearer(ADMIN))
    assert refused.status_code == 409 and refused.json["error"]["field"] == "state"
    user = make_user()
    assert client.delete(f"/api/v1/nodes/{dead}", headers=bearer(user["token"])).status_code == 403
    assert client.delete(f"/api/v1/nodes/{dead}", headers=bearer(ADMIN)).status_code == 204
    assert client.delete(f"/api/v1/nodes/{dead}", headers=bearer(ADMIN)).status_code == 404
    listed = client.get("/api/v1/nodes", headers=bearer(ADMIN)).json
    assert [n["id"] for n in listed] == [live]


@pytest.mark.parametrize("state", ["dead", "active"])
def test_the_cluster_page_removes_a_dead_node_by_its_form(
    client, sessions, serve_node, state
) -> None:
    url = serve_node()
    node_id = dead_node(client, sessions, url)
    if state == "active":
        register(client, url)  # the same URL: the dead node is back
    sign_in(client, ADMIN)
    page = client.get("/")
    form = f'action="/nodes/{node_id}/remove"'
    assert (form in page.get_data(as_text=True)) is (state == "dead")  # a button for the dead
    answer = client.post(f"/nodes/{node_id}/remove", data={"csrf_token": csrf_of(page)})
    assert answer.status_code == 303
    shown = client.get("/").get_data(as_text=True)
    if state == "dead":
        assert f"Node {node_id} removed." in shown and state_of(sessions, node_id) is None
    else:
        assert f"Node {node_id} not removed" in shown and state_of(sessions, node_id) == "active"


def test_a_node_id_past_any_stored_one_is_not_found_not_a_server_error(client) -> None:
    """PostgreSQL refuses to compare an integer past its range: such an id is simply unknown
    (the API fuzz found the leave call answering 500 for one)."""
    beyond = 2**31
    assert leave(client, beyond, 1).status_code == 404
    assert client.delete(f"/api/v1/nodes/{beyond}", headers=bearer(ADMIN)).status_code == 404
