"""A node cut off from the hub, still reaching its feeds and the store, never takes a user past
their budget: its leases lapse before the hub hands them to the other node.

A hub and two nodes, each node behind fault proxies on both hub paths (test_faults), the
feeds and the store reached directly. The user's crawlers run on both nodes; the busier
node is cut off while they crawl, and stays cut off until it has detached by itself and the
other node has spent the budget: the cut-off node never comes back to recount the store.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.integration.conftest import Cluster
from tests.integration.test_faults import TIMERS, FaultCluster
from tests.summary import FAULT_TOTALS, MEASUREMENTS
from tests.support import wait_until

BUDGET = 100
CRAWLERS = 6
# seconds per new feed entry: the crawlers wait for entries, not for leases, so a cut-off
# node has room left under its leases, and both nodes see each entry
EVERY = 1.0


@pytest.mark.slow
def test_a_cut_off_node_stops_storing_before_its_leases_are_granted_again(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(0, **TIMERS)
    fc = FaultCluster(c, nodes=2)
    try:
        token = c.user("bea", item_limit=BUDGET)
        feeds = [
            f"{fc.feed_proxy.url}/feeds/lease{n}.xml?items=0&every={EVERY}" for n in range(CRAWLERS)
        ]
        crawlers = [c.crawler(token, [url])["id"] for url in feeds]
        victim = fc.busiest(crawlers)
        stranded = fc.health()[victim]["crawlers"]
        fc.partition(victim)
        wait_until(
            lambda: not c.node_health(fc.nodes[victim].process)["registered"],
            timeout=60,
            what="the cut-off node to detach by itself",
        )
        wait_until(
            lambda: {c.get(token, i)["state"] for i in crawlers} == {"limit_reached"},
            timeout=90,
            what="the user's budget spent",
        )
        stored = sum(len(c.items(token, i)) for i in crawlers)
    finally:
        fc.close()
    overshoot = max(0, stored - BUDGET)
    FAULT_TOTALS.update({"overshoot": overshoot})
    MEASUREMENTS.append(
        f"lease partition, 2 nodes, {CRAWLERS} crawlers of one user, {len(stranded)} on the "
        f"cut-off node: budget {BUDGET}, stored {stored}, overshoot {overshoot}"
    )
    assert stored == BUDGET
