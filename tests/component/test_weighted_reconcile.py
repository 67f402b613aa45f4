"""Weighted routing in the monitor's reconcile pass, on a real database: a newly leading
monitor leaves a crawler on the node that runs it however full that node is, sends a new key
to a node with room, and a key no node has room for nowhere."""

from __future__ import annotations

import itertools
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.core.node_protocol import Cursor
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.poller import NodeLoad, NodeReport
from blackwidow.monitor.reload import Plan
from blackwidow.monitor.routing import route_weighted
from tests.component.conftest import bearer, make_reconciler

CAPACITY = {1: 1, 2: 5}
NAMES = itertools.count(1)


def create(client: FlaskClient, user: dict[str, Any], feed: str) -> dict[str, Any]:
    name = f"c{next(NAMES)}"  # a user's crawler names are unique
    body = {"name": name, "source": "rss", "query": {"feeds": [feed]}}
    response = client.post("/api/v1/crawlers", json=body, headers=bearer(user["token"]))
    assert response.status_code == 201, response.json
    return response.json


def first_plan(sessions: sessionmaker[Session], running: dict[int, list[int]]) -> Plan:
    """What a newly leading monitor plans when node n reports running `running[n]` (each
    crawler a data source of its own) and has CAPACITY[n]."""
    memory = ShardMemory()
    memory.live, memory.capacity = tuple(CAPACITY), dict(CAPACITY)
    for node_id in CAPACITY:
        crawlers = running.get(node_id, [])
        statuses = [{"crawler_id": c, "digest": "pushed-earlier"} for c in crawlers]
        load = NodeLoad(data_sources=len(crawlers))
        memory.reported.apply(node_id, NodeReport(Cursor("s", 1), True, statuses, [], load=load))
        memory.data_sources[node_id] = len(crawlers)
    plan, _taken = make_reconciler(sessions, memory, "weighted").plan()
    return plan


def pushed(plan: Plan) -> dict[int, int]:
    return {spec.crawler_id: node for node, specs in plan.pushes.items() for spec in specs}


def test_a_crawler_stays_on_its_full_node_and_a_new_key_goes_where_there_is_room(
    client: FlaskClient, make_user, sessions
) -> None:
    user = make_user("ana")
    running, new = (create(client, user, f"https://{n}.example/feed.xml") for n in ("a", "b"))
    best = route_weighted(running["uuid"], list(CAPACITY), CAPACITY)
    other = 1 if best == 2 else 2  # it runs where routing alone would not put it, and fills it
    fill = [create(client, user, f"https://f{i}.example/") for i in range(CAPACITY[other] - 1)]

    plan = first_plan(sessions, {other: [running["id"], *(f["id"] for f in fill)]})

    assert plan.removals == {}
    assert pushed(plan)[running["id"]] == other  # its new spec, where it runs
    assert pushed(plan)[new["id"]] == best  # the full node takes no new key


def test_a_key_no_node_has_room_for_goes_nowhere(client: FlaskClient, make_user, sessions):
    user = make_user("ana")
    crawlers = [create(client, user, f"https://f{i}.example/") for i in range(7)]
    on = {1: [crawlers[0]["id"]], 2: [c["id"] for c in crawlers[1:6]]}

    plan = first_plan(sessions, on)

    assert plan.removals == {}
    assert crawlers[6]["id"] not in pushed(plan)
    assert {c: n for c, n in pushed(plan).items()} == {c: n for n, ids in on.items() for c in ids}
