"""Crawlers that no node could take while none was live run as soon as one is: created before
any node registered, on the only node killed and restarted at its address, and on every node
killed with a new one registering elsewhere (docs/architecture.md "How a crawler runs",
step 3)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from tests.integration.conftest import Cluster
from tests.integration.test_recovery import ONE_SECOND_POLLS, node_states, running_on
from tests.support import wait_until


def crawlers_of(c: Cluster, token: str, count: int) -> list[int]:
    return [c.crawler(token, [c.feed(f"left{n}", items=1)])["id"] for n in range(count)]


def all_running(c: Cluster, token: str, crawler_ids: list[int]) -> bool:
    return None not in running_on(c, token, crawler_ids).values()


def kill_and_wait_dead(c: Cluster, node_ids: set[int]) -> None:
    for node_id in node_ids:
        c.node_by_id(node_id).kill()
    wait_until(
        lambda: all(node_states(c)[n] == "dead" for n in node_ids),
        what=f"nodes {sorted(node_ids)} declared dead",
    )


def passes_go_by(c: Cluster, count: int) -> None:
    """Wait for `count` more monitor passes to be recorded."""
    seen: list[str | None] = []

    def passed() -> bool:
        last = c.call("GET", "/api/v1/health").json()["monitor"]["last_cycle_at"]
        if not seen or seen[-1] != last:
            seen.append(last)
        return len(seen) > count

    wait_until(passed, what=f"{count} monitor passes")


def test_crawlers_created_before_any_node_run_when_one_registers(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(0)
    token = c.user()
    crawlers = crawlers_of(c, token, 3)
    passes_go_by(c, 3)  # each looks at the new crawlers with no node live
    assert {c.get(token, i)["state"] for i in crawlers} == {"pending"}

    c.add_node()
    wait_until(lambda: all_running(c, token, crawlers), what="the crawlers to run on the node")


def test_crawlers_of_the_only_node_run_again_when_it_returns_at_its_address(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(1, **ONE_SECOND_POLLS)
    token = c.user()
    crawlers = crawlers_of(c, token, 3)
    wait_until(lambda: all_running(c, token, crawlers), what="the crawlers to run")
    (node_id,) = set(running_on(c, token, crawlers).values())
    port = urlsplit(c.node_by_id(node_id).url).port
    assert port is not None

    kill_and_wait_dead(c, {node_id})
    wait_until(
        lambda: {c.get(token, i)["state"] for i in crawlers} == {"pending"},
        what="the crawlers to be pending while no node is live",
    )
    c.add_node(port=port)  # what a process supervisor does
    wait_until(
        lambda: set(running_on(c, token, crawlers).values()) == {node_id},
        what="the crawlers to run on the node that came back",
    )


def test_crawlers_of_every_dead_node_run_on_a_new_node(cluster: Callable[..., Cluster]) -> None:
    c = cluster(2, **ONE_SECOND_POLLS)
    token = c.user()
    crawlers = crawlers_of(c, token, 6)
    wait_until(lambda: all_running(c, token, crawlers), what="the crawlers to run")

    kill_and_wait_dead(c, set(node_states(c)))
    c.add_node()
    wait_until(lambda: all_running(c, token, crawlers), what="the crawlers to run on the new node")
    assert len(set(running_on(c, token, crawlers).values())) == 1
