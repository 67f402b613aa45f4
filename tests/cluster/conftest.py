"""Cluster-tier fixtures: simulated hosts (network namespaces on one bridge), PostgreSQL on a
host of its own, and per test two hubs leading two monitor shards, three nodes and a feed
server, each on its own host, started as the integration tier starts its processes.

PostgreSQL is an instance of the tier's own on the `pg` host, not the suite's loopback one, so
that a cut to it is a real packet filter on its address. By default the nodes share one SQLite
store file: namespaces share the file system, so the store is shared as a store server would
be, at no start-up cost, but never partitioned. The Cassandra scenarios instead store items in
a ring of three Cassandra nodes on hosts of their own (tests/cluster/ring.py), started only
when such a scenario runs, and the faults reach the store too.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cluster.hosts import POSTGRES_PORT, HostCluster, fresh_database
from tests.cluster.network import Network, NetworkError
from tests.cluster.ring import RING_HOSTS, Ring, start_ring
from tests.services.postgres import Postgres

HOSTS = ("pg", "hub1", "hub2", "node1", "node2", "node3", "feeds", *RING_HOSTS)


@pytest.fixture(scope="package")
def network() -> Iterator[Network]:
    """The simulated hosts, made once for the tier and removed at its end."""
    try:
        made = Network(HOSTS)
    except NetworkError as error:
        missing = str(error)
    else:
        missing = ""
    if missing:  # a failure, never a skip: a tier that cannot run must not pass
        pytest.fail(f"the cluster tier cannot make its simulated hosts: {missing}", pytrace=False)
    try:
        yield made
    finally:
        made.remove()


@pytest.fixture(scope="package")
def cluster_postgres(network: Network) -> Iterator[str]:
    """A PostgreSQL server on the `pg` host, for the whole tier: its server URL."""
    run_dir = Path(tempfile.mkdtemp(prefix="blackwidow-cluster-pg-"))
    run_dir.chmod(0o755)  # postgres runs as its own user
    pg = network["pg"]
    server = Postgres(run_dir / "postgres", POSTGRES_PORT, pg.address, pg.namespace)
    try:
        server.start()
        server.wait_ready(60)
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture(scope="package")
def cassandra_ring(network: Network) -> Iterator[Ring]:
    """The Cassandra ring on hosts cass1-3, its keyspace shared by the scenarios (each keeps
    to crawler ids of its own: a keyspace's schema takes seconds to make on three nodes)."""
    run_dir = Path(tempfile.mkdtemp(prefix="blackwidow-cluster-cassandra-"))
    ring = start_ring(network, run_dir)
    try:
        yield ring
    finally:
        ring.stop()


@pytest.fixture
def ring_store(cassandra_ring: Ring) -> str:
    """BLACKWIDOW_STORE of the ring's keyspace, once the ring is whole."""
    cassandra_ring.wait_whole()
    return cassandra_ring.url


@pytest.fixture
def cluster(
    network: Network, cluster_postgres: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., HostCluster]]:
    """A factory: cluster(delay=None, **env) starts the feed server, two hubs on a fresh
    database and three nodes (two registering with the first hub, one with the second), and
    waits for them. Every process is stopped, and every fault healed, at the end, also on
    failure. `delay` slows every link by a relay, `env` adds to the processes' environment.
    Crawler ids start at a random base, so scenarios sharing a store never share an id."""
    started: list[HostCluster] = []

    def _start(delay: float | None = None, **env: str) -> HostCluster:
        first_id = 1 + uuid.uuid4().int % 2_000_000 * 1_000  # a 32-bit id, far from the rest
        database_url = fresh_database(cluster_postgres, request.node.name, first_id)
        running = HostCluster(tmp_path, network, database_url, delay, env)
        started.append(running)
        running.start_hub()
        second = running.add_hub()
        for hub in (running.hub, running.hub, second):
            assert hub is not None
            running.add_host_node(hub)
        running.wait_for_nodes(3)
        return running

    try:
        yield _start
    finally:
        network.heal()
        for running in started:
            running.stop()
