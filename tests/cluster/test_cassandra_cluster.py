"""The item store across hosts: two hubs, three nodes and a ring of three Cassandra nodes
(replication 3, LOCAL_QUORUM), each on a simulated host, under a replica killed, partitioned,
delayed or silent, a node cut from a quorum, the whole store unreachable, and two nodes writing
one crawler at once. After each fault heals, every total must hold again, each crawler's count
equal to the distinct items stored (tests/cluster/totals.py).

Each name holds `cassandra`: `pytest tests/cluster -k cassandra -s` runs these alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import requests

from blackwidow.demo.processes import Running
from tests.cluster.hosts import HostCluster
from tests.cluster.ring import RING_HOSTS, Ring
from tests.cluster.totals import DURING_ITEMS, Workload, settle, start_workload
from tests.support import wait_until

# the first scenario waits for the ring to start as well as for its own run
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CLIENTS = ("hub1", "hub2", "node1", "node2", "node3")  # the store's clients
SILENT_FOR = 20.0  # seconds a replica drops every packet: four request timeouts
STORED_WITHIN = 12.0  # seconds a feed created meanwhile may take to be stored: two timeouts
HEALTHY_WITHIN = 10.0  # seconds after the heal for every node to say `ok` again
UNREACHABLE_FOR = 30.0  # seconds the whole store is cut from its clients
REPLICA_DELAY = 0.05  # seconds each way on one replica's link: 100 ms round trips
SAMPLE_INTERVAL = 1.0  # seconds between samples of the hub's item API during a fault
# a node cut from the hubs stops its crawlers soon: the overlap of two writers is seconds long
OVERLAP_TIMERS = {"BLACKWIDOW_ORPHAN_AFTER": "5", "BLACKWIDOW_DETACH_AFTER": "6"}
OVERLAP_ITEMS = 70  # entries of the feed two nodes write at once, 2.5 a second


@pytest.fixture
def overlap_cluster(cluster: Callable[..., HostCluster], ring_store: str) -> HostCluster:
    return cluster(BLACKWIDOW_STORE=ring_store, **OVERLAP_TIMERS)


@pytest.fixture
def ring_cluster(
    cluster: Callable[..., HostCluster], ring_store: str, cassandra_ring: Ring
) -> Iterator[tuple[HostCluster, Ring]]:
    """The hubs and nodes on the ring's store; every replica running again at the end."""
    yield cluster(BLACKWIDOW_STORE=ring_store), cassandra_ring
    cassandra_ring.revive()


def readiness(node: Running) -> tuple[int, list[str]]:
    answer = requests.get(f"{node.url}/readyz", timeout=5)
    return answer.status_code, answer.json()["reasons"]


def wait_healthy(cluster: HostCluster, within: float = HEALTHY_WITHIN) -> float:
    """Until every node's /healthz says `ok`: how long that took."""
    began = time.monotonic()
    wait_until(
        lambda: all(cluster.node_health(node)["status"] == "ok" for node in cluster.nodes),
        within,
        "every node's store to be ok",
    )
    return time.monotonic() - began


class ItemApiSamples:
    """The hub's item API asked now and then during a fault: answers and their times."""

    def __init__(self, cluster: HostCluster, workload: Workload) -> None:
        self.cluster = cluster
        self.crawler_id = next(iter(workload.whole))
        self.token = workload.tokens[self.crawler_id]
        self.answers: list[tuple[int, float]] = []

    def ask(self) -> tuple[int, float]:
        """One answer's status (0: none within 10 s) and how long it took."""
        began = time.monotonic()
        path = f"/api/v1/crawlers/{self.crawler_id}/items?limit=5"
        try:
            status = self.cluster.call("GET", path, self.token).status_code
        except requests.Timeout:
            status = 0
        return status, time.monotonic() - began

    def take_until(self, until: float) -> None:
        """One sample, then one every SAMPLE_INTERVAL until `until`."""
        while True:
            status, took = self.ask()
            self.answers.append((status, took))
            if time.monotonic() + SAMPLE_INTERVAL - took >= until:
                return
            time.sleep(max(0.0, SAMPLE_INTERVAL - took))

    def failed(self) -> int:
        return sum(status != 200 for status, _ in self.answers)

    def note(self) -> str:
        slowest = max((took for _, took in self.answers), default=0.0)
        return f"item_api_failed={self.failed()}/{len(self.answers)} slowest={slowest:.1f}s"


def stored_within(cluster: HostCluster, workload: Workload, name: str, within: float) -> float:
    """A crawler of a static feed made now, through the hub: how long until its node says it
    stored them all (as the hub's API shows; the test process opening a store of its own
    during a fault would time its own connecting)."""
    crawler_id = workload.add_whole(cluster, cluster.hub, name, DURING_ITEMS)
    began = time.monotonic()
    token = workload.tokens[crawler_id]
    wait_until(
        lambda: cluster.get(token, crawler_id)["items_collected"] >= DURING_ITEMS,
        within,
        f"{DURING_ITEMS} items stored",
    )
    return time.monotonic() - began


def node_of(cluster: HostCluster, crawler_id: int) -> Running:
    """The node running the crawler."""
    return wait_until(
        lambda: next(
            (n for n in cluster.nodes if crawler_id in cluster.node_health(n)["crawlers"]), None
        ),
        what=f"a node to run crawler {crawler_id}",
    )


def test_cassandra_replica_killed_and_restarted(ring_cluster: tuple[HostCluster, Ring]) -> None:
    """kill -9 of a replica: a quorum remains, so nothing waits; once it is back, its peers
    replay the hints they kept for it."""
    c, ring = ring_cluster
    workload = start_workload(c)
    ring.kill("cass2")
    took = stored_within(c, workload, "during", 30.0)
    ring.restart("cass2")
    ring.wait_whole()
    ring.wait_hints_replayed()
    settle(c, workload, "cassandra-replica-kill", time.monotonic(), f"stored_in={took:.1f}s")


def test_cassandra_replica_partitioned_from_nodes_then_replicas(
    ring_cluster: tuple[HostCluster, Ring],
) -> None:
    """A replica cut from the store's clients (its peers still write to it), then, healed,
    cut from its peers (the clients still reach it, as a coordinator without a quorum)."""
    c, ring = ring_cluster
    workload = start_workload(c)
    c.network.cut("cass1", CLIENTS)
    from_clients = stored_within(c, workload, "cut-from-clients", 30.0)
    c.network.heal()
    c.network.cut("cass1", ["cass2", "cass3"])
    from_peers = stored_within(c, workload, "cut-from-peers", 30.0)
    c.network.heal()
    ring.wait_whole()
    notes = f"stored_in={from_clients:.1f}s,{from_peers:.1f}s"
    settle(c, workload, "cassandra-replica-partition", time.monotonic(), notes)


def test_cassandra_quorum_out_of_the_nodes_reach(ring_cluster: tuple[HostCluster, Ring]) -> None:
    """Nodes cut from two replicas write through the third, which reaches them; once that
    third is cut from them too, no quorum is within a node's reach: its writes are held and
    retried, and its health says why, until the heal."""
    c, _ = ring_cluster
    workload = start_workload(c)
    for node in c.nodes:
        c.network.cut(c.host_of(node), ["cass2", "cass3"])
    through_third = stored_within(c, workload, "through-the-third", 30.0)
    c.network.cut("cass1", ["cass2", "cass3"])
    node = node_of(c, workload.add_whole(c, c.hub, "during", DURING_ITEMS))
    wait_until(lambda: c.node_health(node)["status"] == "degraded", what="the node degraded")
    error = c.node_health(node)["store"]["error"]
    status, reasons = readiness(node)
    c.network.heal()
    notes = f"stored_in={through_third:.1f}s error={error!r}"
    settle(c, workload, "cassandra-quorum-out-of-reach", time.monotonic(), notes)
    assert error.startswith("cassandra: "), error
    assert status == 503 and any(r.startswith("store: cassandra: ") for r in reasons), reasons


def test_cassandra_store_unreachable_for_30s(ring_cluster: tuple[HostCluster, Ring]) -> None:
    """Every replica cut from the hubs and nodes for 30 s: a node holds what it fetches, says
    why, and stores it all once the store answers again."""
    c, _ = ring_cluster
    workload = start_workload(c)
    for replica in RING_HOSTS:
        c.network.cut(replica, CLIENTS)
    cut_at = time.monotonic()
    node = node_of(c, workload.add_whole(c, c.hub, "during", DURING_ITEMS))
    wait_until(lambda: c.node_health(node)["status"] == "degraded", what="its node degraded")
    status, reasons = readiness(node)
    time.sleep(max(0.0, cut_at + UNREACHABLE_FOR - time.monotonic()))  # the fault's length
    c.network.heal()
    healed_at = time.monotonic()
    healthy = wait_healthy(c, 30.0)
    settle(c, workload, "cassandra-unreachable", healed_at, f"ok_after={healthy:.1f}s")
    assert status == 503 and reasons[0].startswith("store: cassandra: "), reasons


def test_cassandra_delay_on_one_replica(ring_cluster: tuple[HostCluster, Ring]) -> None:
    """100 ms round trips to and from one replica (a user-space delayer on its link: this
    kernel has no netem): the quorum of the other two answers first."""
    c, _ = ring_cluster
    workload = start_workload(c)
    c.network.delay("cass3", REPLICA_DELAY)
    samples = ItemApiSamples(c, workload)
    took = stored_within(c, workload, "during", 30.0)
    samples.take_until(time.monotonic() + 3 * SAMPLE_INTERVAL)
    c.network.heal()
    notes = f"stored_in={took:.1f}s {samples.note()}"
    settle(c, workload, "cassandra-replica-delay", time.monotonic(), notes)
    assert samples.failed() == 0, samples.answers


def test_cassandra_silent_replica(ring_cluster: tuple[HostCluster, Ring]) -> None:
    """One replica drops every packet (no refusal) while the other two are a quorum: items
    go on being stored and the hub's item API answers, at the cost of about one request
    timeout, and every node is `ok` within seconds of the heal."""
    c, _ = ring_cluster
    workload = start_workload(c)
    samples = ItemApiSamples(c, workload)
    assert samples.ask()[0] == 200  # before the fault: the hub has its store open
    c.network.silence("cass2")
    silent_at = time.monotonic()
    first = stored_within(c, workload, "silent-a", STORED_WITHIN)
    samples.take_until(silent_at + SILENT_FOR / 2)
    second = stored_within(c, workload, "silent-b", STORED_WITHIN)
    samples.take_until(silent_at + SILENT_FOR)
    c.network.heal()
    healed_at = time.monotonic()
    healthy = wait_healthy(c)
    notes = f"stored_in={first:.1f}s,{second:.1f}s {samples.note()} ok_after={healthy:.1f}s"
    settle(c, workload, "cassandra-silent-replica", healed_at, notes)
    assert samples.failed() == 0, samples.answers


def test_cassandra_crawler_moved_while_both_nodes_write(overlap_cluster: HostCluster) -> None:
    """A node cut from both hubs, not from the store: the hubs run its crawlers elsewhere (an
    unbounded one at once, bounded ones once its leases lapse) while it writes on until
    orphan_after, so two nodes write one crawler at once. Each count ends as the number of
    distinct items stored, the double counts of the overlap recounted."""
    c = overlap_cluster
    workload = start_workload(c)
    feed = c.feed("overlap", items=10, every=0.4, until=OVERLAP_ITEMS)
    growing = workload.add(c.hub, workload.free_token, feed)
    workload.whole[growing] = OVERLAP_ITEMS
    cut_off, token = node_of(c, growing), workload.tokens[growing]
    first = wait_until(lambda: c.get(token, growing)["node_id"], what="the crawler placed")
    c.network.cut(c.host_of(cut_off), ["hub1", "hub2"])
    wait_until(
        lambda: c.get(token, growing)["node_id"] not in (None, first),
        what="the crawler running on another node",
    )
    both = growing in c.node_health(cut_off)["crawlers"]  # the cut-off node writes it still
    wait_until(
        lambda: growing not in c.node_health(cut_off)["crawlers"],
        what="the cut-off node to stop it at orphan_after",
    )
    c.network.heal()
    healed_at = time.monotonic()
    settle(c, workload, "cassandra-two-writers", healed_at, f"both_wrote={both}")
    assert both
