"""Weighted routing end to end: a hub and two nodes of capacities 2 and 6 as real processes.

The nodes take data sources up to their capacity and no further: a full node gets no new
key (the key waits for room elsewhere) while a crawler of a key it runs already joins it.
"""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Cluster
from tests.support import wait_until


def running_on(c: Cluster, token: str, crawlers: list[dict[str, Any]]) -> dict[int, int]:
    """crawler id -> node id, once every one of them runs."""

    def all_running() -> dict[int, int] | None:
        now = [c.get(token, x["id"]) for x in crawlers]
        return (
            {x["id"]: x["node_id"] for x in now}
            if all(x["state"] == "running" for x in now)
            else None
        )

    return wait_until(all_running, what="every crawler running")


def loads(c: Cluster) -> dict[int, dict[str, Any]]:
    return {n["id"]: n for n in c.call("GET", "/api/v1/nodes", c.admin_token).json()}


def test_nodes_take_keys_up_to_their_capacity_and_a_full_node_gets_nothing_new(cluster):
    c = cluster(0, BLACKWIDOW_ROUTING="weighted", BLACKWIDOW_CAPACITY_HEADROOM="0")
    c.add_node(BLACKWIDOW_NODE_CAPACITY="2")
    c.add_node(BLACKWIDOW_NODE_CAPACITY="6")
    c.wait_for_nodes(2)
    by_capacity = {n["capacity"]: n["id"] for n in loads(c).values()}
    small, large = by_capacity[2], by_capacity[6]
    token = c.user()

    crawlers = [c.crawler(token, [c.feed(f"key{i}", every=0.5)]) for i in range(8)]
    where = running_on(c, token, crawlers)
    assert sorted(where.values()) == [small] * 2 + [large] * 6  # the large node takes more
    nodes = wait_until(
        lambda: (
            (got := loads(c))
            and (got[small]["data_sources"], got[large]["data_sources"]) == (2, 6)
            and got
        ),
        what="each node's poll reporting its data sources",  # polls carry them, a cycle late
    )
    assert all(n["memory_bytes"] > 1_000_000 and n["cpu_percent"] >= 0 for n in nodes.values())
    assert c.call("GET", "/api/v1/nodes/count").json() == {"active": 2, "desired": 2}

    # both full: a new key waits; a new crawler of a key the small node runs joins it there
    waiting = c.crawler(token, [c.feed("key8", every=0.5)])
    on_small = next(x for x in crawlers if where[x["id"]] == small)
    sibling = c.crawler(token, on_small["query"]["feeds"])
    assert running_on(c, token, [sibling]) == {sibling["id"]: small}
    # the monitor took both in turn: the sibling runs, the new key found no room
    assert (got := c.get(token, waiting["id"]))["state"] == "pending" and got["node_id"] is None
    assert c.call("GET", "/api/v1/nodes/count").json() == {"active": 2, "desired": 3}

    # room on the large node: the waiting key goes there, never to the full small node
    stopped = next(x for x in crawlers if where[x["id"]] == large)
    body = {"enabled": False}
    assert c.call("PATCH", f"/api/v1/crawlers/{stopped['id']}", token, json=body).ok
    running = wait_until(
        lambda: (got := c.get(token, waiting["id"]))["state"] == "running" and got,
        what="the waiting crawler running",
    )
    assert running["node_id"] == large
    assert loads(c)[small]["data_sources"] == 2
