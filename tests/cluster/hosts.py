"""Processes on simulated hosts: the integration tier's Cluster with each process in a network
namespace of its own, a fresh hub database per cluster, and relays that delay every link."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy

from blackwidow.demo import processes
from tests.cluster.network import Network
from tests.integration.conftest import FAST_TIMERS, Cluster
from tests.servers.tcp_relay import TcpRelay

PLACES = {"feeds": "feeds", "hub": "hub1", "hub2": "hub2"}  # process name -> host; nodes alike
POSTGRES_PORT = 5432  # its own host: no other server there to clash with
NODE_PORT = 8000  # fixed, so a node's advertised URL can name a relay before the node starts

TIMERS = {
    **FAST_TIMERS,  # poll every 0.5 s, so a leader's lock lapses after 2.5 s
    "BLACKWIDOW_MONITOR_SHARDS": "2",
    "BLACKWIDOW_DATABASE_BUSY_TIMEOUT": "3",
    "BLACKWIDOW_DATABASE_TIMEOUT": "2",  # a hub cut from PostgreSQL answers 503 after 2 s
}


def fresh_database(server_url: str, name: str, first_crawler_id: int = 1) -> str:
    """A new database on the server, with the hub's schema, its crawler ids starting at
    `first_crawler_id` (scenarios sharing a store keep apart by their ids): its URL."""
    url = sqlalchemy.make_url(server_url)
    database = re.sub(r"[^a-z0-9_]", "_", name.lower())[:40] + "_" + uuid.uuid4().hex[:6]
    address = {"host": url.host, "port": url.port, "user": url.username, "dbname": url.database}
    with psycopg.connect(**address, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    made = url.set(database=database).render_as_string(hide_password=False)
    environ = {**os.environ, "BLACKWIDOW_DATABASE_URL": made}
    command = [sys.executable, "-m", "blackwidow", "db", "upgrade"]
    done = subprocess.run(command, env=environ, capture_output=True, text=True)
    assert done.returncode == 0, f"db upgrade failed: {done.stderr}"
    if first_crawler_id != 1:
        with psycopg.connect(**{**address, "dbname": database}, autocommit=True) as connection:
            connection.execute(
                "SELECT setval(pg_get_serial_sequence('crawlers', 'id'), %s, false)",
                (first_crawler_id,),
            )
    return made


class HostCluster(Cluster):
    """The integration tier's Cluster, each process on its own simulated host. With `delay`,
    every link (to PostgreSQL, hubs, nodes and feeds) goes through a delaying TcpRelay."""

    def __init__(
        self,
        workdir: Path,
        network: Network,
        database_url: str,
        delay: float | None,
        env: dict[str, str],
    ) -> None:
        self.network = network
        self.delay = delay
        self.relays: list[TcpRelay] = []
        self.database_url = database_url
        gateway = network.gateway
        env = {
            **TIMERS,
            "BLACKWIDOW_DATABASE_URL": self._relayed_database(database_url),
            "BLACKWIDOW_FETCH_ALLOW": f"{network['feeds'].address},{gateway}",
            "BLACKWIDOW_NODE_NETWORKS": str(network.subnet),
            **env,
        }
        super().__init__(workdir, env)  # starts the feed server
        self.feed_base = self._relayed_url(self.feeds.url)

    def _relayed_database(self, url: str) -> str:
        """The database URL, or one through a relay when links are delayed."""
        if self.delay is None:
            return url
        parts = sqlalchemy.make_url(url)
        host, port = self._relay(parts.host or "", parts.port or POSTGRES_PORT)
        return parts.set(host=host, port=port).render_as_string(hide_password=False)

    def _relayed_url(self, url: str) -> str:
        """An http://host:port URL, or one through a relay when links are delayed."""
        if self.delay is None:
            return url
        address, _, port = url.removeprefix("http://").partition(":")
        host, relay_port = self._relay(address, int(port))
        return f"http://{host}:{relay_port}"

    def _relay(self, host: str, port: int) -> tuple[str, int]:
        """A delaying TcpRelay on the gateway to host:port; closed with the cluster."""
        assert self.delay is not None
        relay = TcpRelay(port, host, self.network.gateway, self.delay)
        self.relays.append(relay)
        return relay.host, relay.port

    def _start(self, name: str, *args: str, **env: str) -> processes.Running:
        host = self.network[PLACES.get(name, name)]
        started = processes.start(
            name,
            (*args, "--host", host.address),
            {**self.env, **env},
            self.workdir,
            wrapper=host.wrapper(),
        )
        return self.adopt(started)

    def host_of(self, process: processes.Running) -> str:
        return PLACES.get(process.name, process.name)

    def add_host_node(self, hub: processes.Running) -> processes.Running:
        """A node on the next node host, registering with `hub`."""
        node_url = f"http://{self.network[f'node{len(self.nodes) + 1}'].address}:{NODE_PORT}"
        advertised = self._relayed_url(node_url)
        return self.add_node(self._relayed_url(hub.url), advertised, port=NODE_PORT)

    def feed(self, name: str, **params: Any) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"{self.feed_base}/feeds/{name}.xml" + (f"?{query}" if query else "")

    def stop(self) -> None:
        super().stop()
        for relay in self.relays:
            relay.close()
