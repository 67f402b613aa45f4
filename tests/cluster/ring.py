"""The cluster tier's Cassandra ring: three nodes, each on a simulated host of its own, started
at once (each with its token set and all three as seeds, so none waits to bootstrap), and one
keyspace at replication 3, made by `blackwidow db upgrade`'s code.

Lean by design, for a loaded 2-core machine: small heaps, quick JIT, one token a node.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster, Session
from cassandra.query import SimpleStatement

from blackwidow.core.store import upgrade_store
from blackwidow.core.store.cassandra import config as cassandra_config
from blackwidow.core.store.cassandra.store import make_cluster
from tests.cluster.network import Network
from tests.services.cassandra import Cassandra
from tests.summary import MEASUREMENTS
from tests.support import wait_until

RING_HOSTS = ("cass1", "cass2", "cass3")
CQL_PORT = 9042  # each on a host of its own: the defaults never clash
STORAGE_PORT = 7000
HEAP = ("256m", "512m")
READY_WITHIN = 180.0  # seconds for three JVMs to start together on a loaded machine
WHOLE_WITHIN = 60.0  # seconds for a restarted node to rejoin and its peers to see it


def tokens(count: int) -> list[int]:
    """Murmur3 tokens spread evenly over the ring, one a node."""
    return [-(2**63) + index * (2**64 // count) for index in range(count)]


class Ring:
    """The three nodes by host name; `kill` and `start` one to make an outage."""

    def __init__(self, network: Network, run_dir: Path) -> None:
        self.run_dir = run_dir
        addresses = [network[name].address for name in RING_HOSTS]
        self.addresses = dict(zip(RING_HOSTS, addresses, strict=True))
        self.url = ""  # BLACKWIDOW_STORE of its keyspace, once made
        self.nodes = {
            name: Cassandra(
                run_dir / name,
                port=CQL_PORT,
                storage_port=STORAGE_PORT,
                host=network[name].address,
                cluster_name="blackwidow-ring",
                namespace=network[name].namespace,
                seeds=addresses,
                heap=HEAP,
                token=token,
                durable_schema=True,  # a node killed -9 keeps its keyspaces
            )
            for name, token in zip(RING_HOSTS, tokens(len(RING_HOSTS)), strict=True)
        }

    def start(self) -> None:
        """Start the three at once and wait until each answers CQL."""
        for node in self.nodes.values():
            node.start()
        for node in self.nodes.values():
            node.wait_ready(READY_WITHIN)

    def kill(self, name: str) -> None:
        """kill -9: no flush, no goodbye to its peers."""
        process = self.nodes[name].process
        assert process is not None
        process.kill()
        process.wait()
        self.nodes[name].process = None

    def restart(self, name: str) -> None:
        self.nodes[name].start()
        self.nodes[name].wait_ready(READY_WITHIN)

    def revive(self) -> None:
        """Start again every node that is not running (a scenario that failed mid-outage)."""
        for name, node in self.nodes.items():
            if node.process is None or node.process.poll() is not None:
                self.restart(name)

    def wait_hints_replayed(self) -> None:
        """Until no node keeps hints for another (system_views.pending_hints is empty)."""
        pending = SimpleStatement("SELECT host_id, files FROM system_views.pending_hints")

        def replayed(session: Session) -> bool:
            answers = on_each(session, pending)
            return answers is not None and not any(row.files for rows in answers for row in rows)

        with connected(self.url) as session:
            wait_until(lambda: replayed(session), WHOLE_WITHIN, "the hints to be replayed")

    def stop(self) -> None:
        """Killed, not stopped: their data goes with the run dir, so nothing needs flushing."""
        for name, node in self.nodes.items():
            if node.process is not None:
                self.kill(name)
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def make_keyspace(self) -> None:
        """A new keyspace at replication 3 with the store's schema, made by `blackwidow db
        upgrade`'s code once every node knows the others (else a schema change made on one
        that knows none is agreed at once, and the next lands on a node without it); `url`
        names it, at the default consistency (LOCAL_QUORUM)."""
        hosts = ",".join(self.addresses.values())
        keyspace = f"ring_{uuid.uuid4().hex[:12]}"
        self.url = f"cassandra://{hosts}:{CQL_PORT}/{keyspace}?replication=3"
        peers = SimpleStatement("SELECT peer FROM system.peers_v2")

        def formed(session: Session) -> bool:
            answers = on_each(session, peers)
            return answers is not None and all(len(rows) == len(RING_HOSTS) - 1 for rows in answers)

        with connected(self.url) as session:
            wait_until(lambda: formed(session), WHOLE_WITHIN, "the Cassandra ring to form")
        upgrade_store(self.url)

    def wait_whole(self) -> None:
        """Until each node coordinates a read of the keyspace at consistency ALL: every node
        is up and sees the others up (a scenario starts on a whole ring)."""
        keyspace = cassandra_config.parse(self.url.removeprefix("cassandra://")).keyspace
        probe = SimpleStatement(
            f"SELECT version FROM {keyspace}.schema_versions",
            consistency_level=ConsistencyLevel.ALL,
        )

        with connected(self.url) as session:
            wait_until(
                lambda: on_each(session, probe) is not None,
                WHOLE_WITHIN,
                "the Cassandra ring to be whole",
            )


def on_each(session: Session, statement: SimpleStatement) -> list[list[Any]] | None:
    """The statement's rows with each node of the ring as its coordinator; None while the
    driver knows fewer nodes, or one of them fails it."""
    hosts = session.cluster.metadata.all_hosts()
    if len(hosts) != len(RING_HOSTS):
        return None
    try:
        return [list(session.execute(statement, host=host, timeout=5)) for host in hosts]
    except Exception:  # not yet, whatever the failure: asked again
        return None


@contextmanager
def connected(url: str) -> Iterator[Session]:
    """A driver session as the store makes it, for the test process's own checks."""
    cluster: Cluster = make_cluster(cassandra_config.parse(url.removeprefix("cassandra://")))
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def start_ring(network: Network, run_dir: Path) -> Ring:
    """The ring, started, with its keyspace made; stopped again when it does not come up."""
    began = time.monotonic()
    ring = Ring(network, run_dir)
    try:
        ring.start()
        ring.make_keyspace()
    except BaseException:
        ring.stop()
        raise
    MEASUREMENTS.append(f"cassandra ring of 3 and its keyspace: {time.monotonic() - began:.1f} s")
    return ring
