"""Integration fixtures: real hub, node and feed-server processes on loopback ports.

Each server binds port 0 and prints its URL as its first line; timers are shortened so
failures, orphans and detaches happen within seconds.
"""

from __future__ import annotations

import itertools
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from blackwidow.demo import processes
from tests.component.test_queue import SpareRedis, closed_port
from tests.servers.listing_site import ListingSite
from tests.support import every_page, wait_until

FAST_TIMERS = {
    "BLACKWIDOW_POLL_INTERVAL": "0.5",
    "BLACKWIDOW_ACCEPTABLE_PAUSE": "1",  # with phi: a node silent ~2 s is declared dead
    "BLACKWIDOW_PHI_MIN_STD": "0.1",
    "BLACKWIDOW_ORPHAN_AFTER": "3",
    "BLACKWIDOW_DETACH_AFTER": "4",
    "BLACKWIDOW_FEED_INTERVAL": "0.3",
    # the one local feed server stands for many sites: no per-host politeness toward it
    "BLACKWIDOW_HOST_CONCURRENCY": "16",
    "BLACKWIDOW_HOST_GAP": "0",
}


class Cluster:
    """A running hub with its nodes and a sample-feed server, driven over real HTTP."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.admin_token = secrets.token_urlsafe(16)
        self.env = {
            "BLACKWIDOW_DATABASE_URL": f"sqlite:///{workdir / 'hub.db'}",
            "BLACKWIDOW_STORE": f"sqlite:///{workdir / 'items.db'}",
            "BLACKWIDOW_ADMIN_TOKEN": self.admin_token,
            "BLACKWIDOW_CLUSTER_SECRET": secrets.token_urlsafe(16),
            "BLACKWIDOW_FETCH_ALLOW": "127.0.0.1",
            "BLACKWIDOW_OUTBOX_DIR": str(workdir / "node-files"),  # spools and ledgers
            **FAST_TIMERS,
            **env,
        }
        self.nodes: list[processes.Running] = []
        self.hub: processes.Running | None = None
        self.other_hubs: list[processes.Running] = []
        self._started: list[processes.Running] = []  # all of them, whatever tests reassign
        self._names = itertools.count(1)  # crawler names, unique per user as the hub wants
        self.feeds = self._start("feeds", "blackwidow.demo.feed_server", "--port", "0")

    def _start(self, name: str, *args: str, **env: str) -> processes.Running:
        """`python -m <args>` as process `name`, with `env` added to the cluster's."""
        return self.adopt(processes.start(name, args, {**self.env, **env}, self.workdir))

    def adopt(self, process: processes.Running) -> processes.Running:
        """A process started elsewhere that stop() must stop too."""
        self._started.append(process)
        return process

    @property
    def hub_url(self) -> str:
        assert self.hub is not None
        return self.hub.url

    def start_hub(self, port: int = 0) -> processes.Running:
        self.hub = self._start("hub", "blackwidow", "hub", "--port", str(port))
        return self.hub

    def add_hub(self) -> processes.Running:
        """Another hub process on the same database (as a second host would be)."""
        other = self._start(f"hub{len(self.other_hubs) + 2}", "blackwidow", "hub", "--port", "0")
        self.other_hubs.append(other)
        return other

    def start_gunicorn_hub(
        self, workers: int, app: str = "blackwidow.wsgi:app", **env: str
    ) -> processes.Running:
        """The hub as production runs it (gunicorn with the Procfile's config), answering;
        `app` as the Procfile's web names it (`blackwidow.wsgi:hub_app(monitor=False)`: no
        monitor)."""
        environ = {**os.environ, **self.env, **env}
        command = [sys.executable, "-m", "blackwidow", "db", "upgrade"]
        subprocess.run(command, env=environ, check=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log_path = self.workdir / "gunicorn.log"
        with open(log_path, "w") as log:
            hub = subprocess.Popen(
                [
                    *(sys.executable, "-m", "gunicorn", "-c", "python:blackwidow.gunicorn_conf"),
                    *("-w", str(workers), "-b", f"127.0.0.1:{port}", app),
                ],
                env=environ,
                stderr=log,
                stdout=log,
            )
        self.hub = self.adopt(processes.Running("hub", hub, f"http://127.0.0.1:{port}", log_path))

        def answers() -> bool:
            try:
                return requests.get(f"{self.hub_url}/healthz", timeout=2).ok
            except requests.RequestException:  # refused, or a worker still booting under load
                return False

        wait_until(answers, what="gunicorn to answer")
        return self.hub

    def add_node(
        self,
        hub_url: str | None = None,
        advertise_url: str | None = None,
        port: int = 0,
        **env: str,
    ) -> processes.Running:
        """A node; `hub_url` and `advertise_url` let a fault proxy sit on either path, `env`
        adds to its environment (e.g. BLACKWIDOW_NODE_CAPACITY)."""
        name = f"node{len(self.nodes) + 1}"
        args = ["spawn", "--hub", hub_url or self.hub_url, "--port", str(port)]
        if advertise_url:
            args += ["--advertise-url", advertise_url]
        node = self._start(name, "blackwidow", *args, **env)
        self.nodes.append(node)
        return node

    def call(
        self, method: str, path: str, token: str | None = None, **kwargs: Any
    ) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.request(
            method, f"{self.hub_url}{path}", headers=headers, timeout=10, **kwargs
        )

    def every(self, path: str, token: str | None = None) -> list[Any]:
        """Every row of a paged list: its Link headers followed to the last page."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return every_page(
            lambda url: requests.get(url, headers=headers, timeout=10), f"{self.hub_url}{path}"
        )

    def user(self, name: str = "ana", item_limit: int | None = None) -> str:
        body = {"name": name, "item_limit": item_limit}
        response = self.call("POST", "/api/v1/users", self.admin_token, json=body)
        assert response.status_code == 201, response.text
        return response.json()["token"]

    def crawler(self, token: str, feeds: list[str], **fields: Any) -> dict[str, Any]:
        query: dict[str, Any] = {"feeds": feeds}
        if "keywords" in fields:
            query["keywords"] = fields.pop("keywords")
        return self.create(token, "rss", query, **fields)

    def create(
        self, token: str, source: str, query: dict[str, Any], **fields: Any
    ) -> dict[str, Any]:
        # a user's crawler names are unique: each made here is named apart unless asked
        body = {"name": f"c{next(self._names)}", "source": source, "query": query, **fields}
        response = self.call("POST", "/api/v1/crawlers", token, json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def batch(self, token: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Crawlers created in one transaction, so one monitor pass pushes them together."""
        body = {"crawlers": bodies}
        response = self.call("POST", "/api/v1/crawlers/batch", token, json=body)
        assert response.status_code == 201, response.text
        return response.json()["crawlers"]

    def get(self, token: str, crawler_id: int) -> dict[str, Any]:
        return self.call("GET", f"/api/v1/crawlers/{crawler_id}", token).json()

    def feed_health(self, token: str, crawler_id: int) -> list[dict[str, Any]] | None:
        return self.call("GET", f"/api/v1/crawlers/{crawler_id}/feeds", token).json()["feeds"]

    def items(self, token: str, crawler_id: int) -> list[dict[str, Any]]:
        path = f"/api/v1/crawlers/{crawler_id}/items?limit=1000"
        return self.call("GET", path, token).json()["items"]

    def feed(self, name: str, **params: Any) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"{self.feeds.url}/feeds/{name}.xml" + (f"?{query}" if query else "")

    def wait_for_nodes(self, count: int) -> None:
        wait_until(
            lambda: self.call("GET", "/api/v1/nodes/count").json()["active"] == count,
            what=f"{count} active nodes",
        )

    def node_by_id(self, node_id: int) -> processes.Running:
        nodes = self.call("GET", "/api/v1/nodes", self.admin_token).json()
        url = next(n["url"] for n in nodes if n["id"] == node_id)
        return next(n for n in self.nodes if n.url == url)

    def node_health(self, node: processes.Running) -> dict[str, Any]:
        return requests.get(f"{node.url}/healthz", timeout=5).json()

    def stop(self) -> None:
        """Stop every process this cluster started, the latest first, the nodes last: with no
        hub to tell they are leaving, they stop at once rather than hand their crawlers on."""
        nodes = [p for p in reversed(self._started) if p in self.nodes]
        for process in [p for p in reversed(self._started) if p not in nodes] + nodes:
            process.stop()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Callable[[int], Cluster]]:
    """A factory: cluster(n, **env) starts a feed server, a hub and n nodes, and waits for them.

    `env` adds to or overrides the processes' environment, e.g. BLACKWIDOW_STORE.
    """
    started: list[Cluster] = []

    def _start(node_count: int, **env: str) -> Cluster:
        running = Cluster(tmp_path, env)
        started.append(running)
        running.start_hub()
        for _ in range(node_count):
            running.add_node()
        running.wait_for_nodes(node_count)
        return running

    yield _start
    for running in started:
        running.stop()


@pytest.fixture
def site() -> Iterator[ListingSite]:
    """The local listing site (tests.servers.listing_site), in this process."""
    with ListingSite() as running:
        yield running


def post_numbers(items: list[dict[str, Any]]) -> list[int]:
    """Feed entry numbers (the feed server's guids end in /<n>), in the order given."""
    return [int(item["id"].rsplit("/", 1)[1]) for item in items]


@pytest.fixture
def spare_redis(tmp_path: Path) -> Iterator[SpareRedis]:
    """A Redis of the test's own on a free port, to stop and start as an outage."""
    server = SpareRedis(tmp_path / "redis", port=closed_port())
    try:
        yield server
    finally:
        server.stop()
