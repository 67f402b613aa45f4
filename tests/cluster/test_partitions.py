"""Two hubs leading two monitor shards, three nodes, PostgreSQL and a feed server, each on a
simulated host, under partitions, one-way loss, a kill -9 during a cut and slow links. After
each fault heals, every total must hold again (tests/cluster/totals.py)."""

from __future__ import annotations

import re
import time

import pytest
import requests
import sqlalchemy

from blackwidow.demo.processes import Running
from tests.cluster.hosts import HostCluster
from tests.cluster.totals import DURING_ITEMS, settle, start_workload
from tests.support import wait_until

# every scenario is slow. Under pytest-xdist each worker running a file of the tier makes a
# network of its own (names and subnet its own), so this file and test_cassandra_cluster.py
# may run side by side
pytestmark = pytest.mark.slow

CUT_ANSWER_WITHIN = 10.0  # seconds a request to a hub cut from PostgreSQL may take (503)
# each way on every link: 100 ms round trips, a link across a continent. A monitor cycle is
# then about 1.5 s of PostgreSQL round trips, so the timers grow with it: at a 0.5 s poll no
# leader would finish a cycle before its lock's lease ran out
LINK_DELAY = 0.05
SLOW_LINK_TIMERS = {
    "BLACKWIDOW_POLL_INTERVAL": "1",
    "BLACKWIDOW_ACCEPTABLE_PAUSE": "2",
    "BLACKWIDOW_ORPHAN_AFTER": "5",
    "BLACKWIDOW_DETACH_AFTER": "6",
}
LOSS_FOR = 6.0  # seconds of one-way loss: past the detach timer (4 s) and a lock's lease (2.5 s)


def leaders(cluster: HostCluster) -> dict[str, Running]:
    """Shard lock name -> the hub process holding it unexpired, read from PostgreSQL (a holder
    names its pid, and `ip netns exec` becomes the hub: the same pid)."""
    hubs = {str(hub.process.pid): hub for hub in (cluster.hub, *cluster.other_hubs) if hub}
    engine = sqlalchemy.create_engine(cluster.database_url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sqlalchemy.text(
                    "SELECT name, holder FROM monitor_lock WHERE name LIKE 'monitor/%' "
                    "AND expires_at > now() AND holder IS NOT NULL"
                )
            ).all()
    finally:
        engine.dispose()
    return {
        name: hubs[holder.split(":")[1]] for name, holder in rows if holder.split(":")[1] in hubs
    }


def leading_hub(cluster: HostCluster) -> Running:
    """The hub that leads a shard (the first shard's leader)."""
    led = wait_until(lambda: leaders(cluster), what="a shard leader")
    return led[min(led)]


def other_hub(cluster: HostCluster, hub: Running) -> Running:
    return next(h for h in (cluster.hub, *cluster.other_hubs) if h is not None and h is not hub)


def leads_every_shard(cluster: HostCluster, hub: Running) -> bool:
    led = leaders(cluster)
    return len(led) == 2 and all(holder is hub for holder in led.values())


def answer_while_cut(hub: Running) -> str:
    """How the hub answers an API request that needs the database: `503_after_1.2s`, or
    `nothing_within_10s`."""
    began = time.monotonic()
    try:
        answer = requests.get(f"{hub.url}/api/v1/nodes/count", timeout=CUT_ANSWER_WITHIN)
    except requests.Timeout:
        return f"nothing_within_{CUT_ANSWER_WITHIN:g}s"
    retry = "" if answer.headers.get("Retry-After") else "_without_retry_after"
    return f"{answer.status_code}{retry}_after_{time.monotonic() - began:.1f}s"


def busiest_node(cluster: HostCluster) -> Running:
    """The node running the most subscribers."""
    return max(cluster.nodes, key=lambda node: cluster.node_health(node)["subscribers"])


def everyone_but(cluster: HostCluster, host: str) -> list[str]:
    return [name for name in cluster.network.hosts if name != host]


def test_a_node_cut_off_past_its_detach_timer(cluster):
    c = cluster()
    workload = start_workload(c)
    node = busiest_node(c)
    host = c.host_of(node)
    c.network.cut(host, everyone_but(c, host))
    wait_until(lambda: not c.node_health(node)["registered"], what="the cut node to detach")
    workload.wait_collected(c, workload.add_whole(c, c.hub, "during", DURING_ITEMS))
    c.network.heal()
    settle(c, workload, "node-detach", time.monotonic())


def test_the_leading_hub_cut_from_the_database_then_from_everything(cluster):
    c = cluster()
    workload = start_workload(c)
    hub = leading_hub(c)
    other = other_hub(c, hub)
    c.network.cut(c.host_of(hub), ["pg"])
    wait_until(lambda: leads_every_shard(c, other), what="the other hub to lead both shards")
    answer = answer_while_cut(hub)
    c.network.cut(c.host_of(hub), everyone_but(c, c.host_of(hub)))
    workload.wait_collected(c, workload.add_whole(c, other, "during", DURING_ITEMS))
    c.network.heal()
    c.hub = other  # the API the checks read, whatever the cut hub's state
    settle(c, workload, "hub-db-cut", time.monotonic(), f"cut_hub_answer={answer}")
    assert re.fullmatch(r"503_after_.*", answer), f"a hub cut from PostgreSQL answered {answer}"


def test_one_way_loss_from_a_hub_to_a_node(cluster):
    c = cluster()
    workload = start_workload(c)
    hub = leading_hub(c)
    node = busiest_node(c)
    c.network.lose(c.host_of(hub), c.host_of(node))
    lost_from = time.monotonic()
    workload.add_whole(c, other_hub(c, hub), "during", DURING_ITEMS)
    time.sleep(max(0.0, lost_from + LOSS_FOR - time.monotonic()))  # the fault's length
    c.network.heal()
    settle(c, workload, "one-way-loss", time.monotonic())


def test_a_hub_killed_while_a_node_is_cut_off(cluster):
    c = cluster()
    workload = start_workload(c)
    node = busiest_node(c)
    host = c.host_of(node)
    c.network.cut(host, everyone_but(c, host))
    hub = leading_hub(c)
    other = other_hub(c, hub)
    hub.kill()
    c.hub = other  # the API the checks read
    wait_until(lambda: leads_every_shard(c, other), what="the live hub to lead both shards")
    workload.wait_collected(c, workload.add_whole(c, other, "during", DURING_ITEMS))
    c.network.heal()
    settle(c, workload, "kill-during-cut", time.monotonic())


def test_delay_on_every_link(cluster):
    c = cluster(delay=LINK_DELAY, **SLOW_LINK_TIMERS)
    workload = start_workload(c)
    workload.add_whole(c, c.other_hubs[0], "during", DURING_ITEMS)
    settle(c, workload, "delay", time.monotonic())
