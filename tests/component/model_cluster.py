"""A whole cluster in one process for the model-based test of the monitor: the hub's real app
on a real SQLite file (API writes through its test client), real nodes on loopback, and hub
processes running the real monitor cycle by cycle on one clock the test moves.

`settle` runs cycles until the cluster is quiet: every shard led, every node that answers
registered and live, every node that does not declared dead, every data source fetched once,
no crawler left for the monitor to look at again, none held back while a lost node's
leases may be in force, and a last cycle that changed nothing SQL records. Bounded: a
cluster that never quiets fails the history.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from blackwidow.app import create_app
from blackwidow.core.settings import Settings
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.models import LIVE_NODE_STATES, Assignment, Crawler, Node
from tests.component.conftest import SECRET, bearer, hub_settings
from tests.component.model_hubs import ModelClock, ModelHub
from tests.component.model_nodes import ModelNode
from tests.support import wait_until

# a Monday 08:00 UTC: windows open and close as the histories' cycles move the clock on
WALL_AT = datetime(2026, 1, 5, 8, 0, tzinfo=UTC).timestamp()
SETTLE_CYCLES = 40  # a cluster quiet after none of them has not converged
HUBS = ("a", "b")


class Cluster:
    def __init__(self, template: Path, workdir: Path, routing: str, shards: int) -> None:
        workdir.mkdir(parents=True)
        shutil.copyfile(template, workdir / "hub.db")
        self.settings: Settings = hub_settings(
            f"sqlite:///{workdir / 'hub.db'}", workdir, routing=routing, monitor_shards=shards
        )
        self.clock = ModelClock(WALL_AT)
        self._app = create_app(self.settings)
        self.api: FlaskClient = self._app.test_client()
        self.store = SqliteStore(str(workdir / "items.db"))  # the nodes' one store
        self.nodes: list[ModelNode] = []  # the nodes whose process runs
        self.hubs: dict[str, ModelHub] = {"a": ModelHub("a", self.settings, self.clock)}

    # -- the world changes ----------------------------------------------------------------

    def start_node(self, capacity: int, port: int = 0) -> ModelNode:
        node = ModelNode(capacity, self.clock, self.store, port)
        self.nodes.append(node)
        return node

    def kill_node(self, node: ModelNode) -> None:
        """The node's process is gone: what it ran stops, its port is free."""
        node.kill()
        self.nodes.remove(node)

    def start_hub(self, name: str) -> None:
        if name not in self.hubs:
            self.hubs[name] = ModelHub(name, self.settings, self.clock)

    def stop_hub(self, name: str, graceful: bool) -> None:
        hub = self.hubs.pop(name, None)
        if hub is not None:
            hub.stop(graceful)

    # -- time passes ------------------------------------------------------------------------

    def cycle(self) -> None:
        """One poll interval: nodes register and look at their timers, then every hub process
        keeps its locks and runs a cycle of each shard it leads."""
        self.clock.now += self.settings.poll_interval
        for node in self.nodes:
            if node.up and not node.node.registered.is_set():
                self._register(node)
            node.watch(self.settings.orphan_after, self.settings.detach_after)
        for hub in list(self.hubs.values()):
            hub.keep_locks()
        for hub in list(self.hubs.values()):
            hub.cycle()

    def _register(self, node: ModelNode) -> None:
        """What the node's registration thread does, through the hub's real API."""
        body = {"url": node.url, "capacity": node.capacity}
        answer = self.api.post("/api/v1/nodes", json=body, headers=bearer(SECRET))
        assert answer.status_code == 201, answer.json
        node.node.mark_registered(answer.json["id"], answer.json["generation"])

    def settle(self) -> None:
        """Cycles until quiet (see the module's docstring); a hub process runs by then."""
        if not self.hubs:
            self.start_hub("a")  # the operators' supervisor restarts the hub
        before = None
        for _ in range(SETTLE_CYCLES):
            wait_until(
                lambda: all(node.fetched() for node in self.nodes),
                timeout=10,
                what="every data source's first fetch",
            )
            self.cycle()
            now = self.recorded() if self.quiet() else None
            if now is not None and now == before:
                return
            before = now
        raise AssertionError(f"not quiet after {SETTLE_CYCLES} cycles: {self.unquiet()}")

    def recorded(self) -> tuple[Any, ...]:
        """What SQL says of crawlers, assignments and nodes. A quiet cycle that changes none
        of it is the last: a budgeted user's crawlers are looked at again every cycle, and a
        count one shard records may change another shard's decision in the next."""
        with self.sessions()() as session:
            return tuple(
                tuple(session.execute(query).all())
                for query in (
                    select(
                        Crawler.id, Crawler.state, Crawler.items_collected, Crawler.lease
                    ).order_by(Crawler.id),
                    select(Assignment.crawler_id, Assignment.node_id).order_by(
                        Assignment.crawler_id
                    ),
                    select(Node.id, Node.state, Node.generation).order_by(Node.id),
                )
            )

    def quiet(self) -> bool:
        return not self.unquiet()

    def unquiet(self) -> list[str]:
        """What keeps the cluster from being quiet, in words (empty: quiet)."""
        why = []
        led = [(shard, led) for hub in self.hubs.values() for shard, led in hub.led.items()]
        if sorted(shard.index for shard, _ in led) != list(range(self.settings.monitor_shards)):
            why.append(f"shards led: {sorted(str(shard) for shard, _ in led)}")
        for shard, one in led:
            if one.memory.dirty:
                why.append(f"shard {shard} dirty: {sorted(one.memory.dirty)}")
            held = [
                c.id for c in one.memory.crawlers.values() if (c.lost_until or 0) > self.clock()
            ]
            if held:  # a lost node may still store under their leases: placed once they lapse
                why.append(f"shard {shard} holds back {sorted(held)}")
        states = self.node_states()
        up = {node.url for node in self.nodes if node.up}
        for url, state in sorted(states.items()):
            if state in LIVE_NODE_STATES and url not in up:
                why.append(f"{url} silent, state {state}")
        for node in self.nodes:
            if node.up and not (node.node.registered.is_set() and states.get(node.url) == "active"):
                why.append(f"{node.url} answers, state {states.get(node.url)}")
        return why

    def node_states(self) -> dict[str, str]:
        """Node URL -> its state in SQL, for the node registered last at that URL."""
        hub = next(iter(self.hubs.values()))
        with hub.sessions() as session:
            return {url: state for url, state in session.execute(select(Node.url, Node.state))}

    def sessions(self) -> Any:
        return self._app.extensions["blackwidow"].sessions

    def close(self) -> None:
        for node in self.nodes:
            node.kill()
        for name in list(self.hubs):
            self.stop_hub(name, graceful=True)
        with self.sessions()() as session:
            session.get_bind().dispose()
        self.store.close()
