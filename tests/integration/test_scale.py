"""One integration test at realistic size: 2,000 RSS crawlers on one real node, default timers.

Placing them must outpace the node's own timers: no subscriber is dropped as an orphan, the
node never detaches, and every crawler runs and stores its items. (Speed is measured in
bench/, not here.)
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.conftest import Cluster
from tests.summary import MEASUREMENTS
from tests.support import wait_until

CRAWLERS = 2000
ITEMS = 5
DEFAULT_TIMERS = {  # the settings' defaults, undoing the suite's fast timers
    "BLACKWIDOW_POLL_INTERVAL": "2",
    "BLACKWIDOW_ACCEPTABLE_PAUSE": "3",
    "BLACKWIDOW_PHI_MIN_STD": "0.2",
    "BLACKWIDOW_ORPHAN_AFTER": "30",
    "BLACKWIDOW_DETACH_AFTER": "60",
    "BLACKWIDOW_FEED_INTERVAL": "60",
}  # per-host politeness stays off, as in every integration test (see conftest)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_thousand_crawlers_settle_on_one_node(cluster) -> None:
    c: Cluster = cluster(1, **DEFAULT_TIMERS)
    token = c.user()
    node = c.nodes[0]
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        created = list(
            pool.map(
                lambda n: c.crawler(token, [c.feed(f"scale-{n}", items=ITEMS)]), range(CRAWLERS)
            )
        )
    assert len({crawler["id"] for crawler in created}) == CRAWLERS
    created_in = time.monotonic() - started

    def states() -> dict[str, int]:
        return c.call("GET", "/api/v1/health").json()["crawlers"]

    wait_until(lambda: states().get("running") == CRAWLERS, timeout=300, what="all running")
    placed_in = time.monotonic() - started

    def stored() -> int:
        listed = c.every("/api/v1/crawlers?limit=1000", token)
        return sum(crawler["items_collected"] for crawler in listed)

    wait_until(lambda: stored() == CRAWLERS * ITEMS, timeout=300, what="every item stored")
    stored_in = time.monotonic() - started

    health = c.node_health(node)
    assert health["subscribers"] == CRAWLERS
    assert health["subscribers_started"] == CRAWLERS  # none dropped and pushed again
    log = node.log_path.read_text()
    assert "orphan subscriber dropped" not in log
    assert "node detached" not in log
    nodes = c.every("/api/v1/nodes", c.admin_token)
    assert [n["state"] for n in nodes] == ["active"]
    MEASUREMENTS.append(
        f"{CRAWLERS} crawlers on one node: created in {created_in:.1f}s, all running after "
        f"{placed_in:.1f}s, all {CRAWLERS * ITEMS} items stored after {stored_in:.1f}s"
    )
