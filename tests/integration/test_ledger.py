"""A node killed with SIGKILL after deliveries no poll answer carried: restarted at its address,
it reports them from its run ledger, and the user's billed figure and the crawler's
delivered figure count them once."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.component.test_queue import closed_port
from tests.integration.conftest import Cluster
from tests.servers.fault_proxy import FaultProxy
from tests.support import wait_until


@pytest.fixture
def to_node() -> Iterator[FaultProxy]:
    """Hub -> node: the hub reaches the node only through it, so its poll answers can be lost."""
    proxy = FaultProxy()
    try:
        yield proxy
    finally:
        proxy.close()


def test_a_killed_node_s_unpolled_deliveries_are_counted_after_a_restart(
    cluster: Callable[..., Cluster], to_node: FaultProxy
) -> None:
    c = cluster(0)
    port = closed_port()
    to_node.upstream = c.add_node(advertise_url=to_node.url, port=port).url
    c.wait_for_nodes(1)
    token = c.user()
    crawler = c.crawler(token, [c.feed("ledger", items=5, every=0.5)])
    user_id, crawler_id = crawler["user_id"], crawler["id"]

    def figures() -> tuple[int, int]:
        """(billed to the user, delivered to the crawler), as the hub counts them."""
        usage = c.call("GET", f"/api/v1/users/{user_id}/usage", token).json()
        return usage["items_delivered"], c.get(token, crawler_id)["items_delivered"]

    wait_until(lambda: min(figures()) >= 5, what="the first deliveries counted")
    to_node.add("drop_response", "GET", "/subscribers", times=None)
    wait_until(lambda: to_node.injected["drop_response"] >= 1, what="a lost poll answer")
    heard = max(figures())  # the hub hears nothing more from this node

    def delivered_on_node() -> int:
        sources = c.node_health(c.nodes[0])["data_sources"]
        return sum(source["delivered"].get(str(user_id), 0) for source in sources)

    killed_after = wait_until(
        lambda: (found := delivered_on_node()) > heard and found,
        what="deliveries no poll answer carried",
    )
    c.nodes[0].kill()
    response = c.call("PATCH", f"/api/v1/crawlers/{crawler_id}", token, json={"enabled": False})
    assert response.status_code == 200, response.text  # no new run to blur the figures
    to_node.clear()
    c.add_node(advertise_url=to_node.url, port=port)

    billed, delivered = wait_until(
        lambda: min(found := figures()) >= killed_after and found,
        what=f"both figures to reach the {killed_after} items the killed node delivered "
        f"(the hub had heard {heard})",
    )
    assert billed == delivered
