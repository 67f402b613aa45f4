"""Simulated nodes: N real nodes in one cheap process, each on its own port on 127.0.0.1.

Each node is the real thing — `spawn.node.NodeState`, a real `DataSourcePool` and the app of
`spawn.app.create_node_app` — with only its data sources and item sink replaced (a source that
fetches nothing, a sink that stores nothing), so whatever the hub <-> node protocol becomes,
the hub talks to the node code that ships. Registration is `spawn.registration.register_once`
(again whenever a node detaches) and the timers are `spawn.watchdog.check`, once a second over
every node. Listening is `bench.many_listeners`: one epoll loop and a few threads for all.

    .venv/bin/python -m bench.simulated_nodes --hub URL --nodes N

Stdout, one JSON line each: first `{"nodes": [url, ...]}` once every node registered, then one
answer per line read on stdin: `stats` gives the calls served by kind (`poll`, `put_one`,
`put_batch`, `delete_one`, `delete_batch`, ...) and status, the CPU seconds of the process and
of the node code by call kind, node timer events, and per node its id, whether it is
registered and the crawler ids it holds.
End of stdin (or `quit`) stops it. The cluster secret is BLACKWIDOW_CLUSTER_SECRET.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import requests

from bench.many_listeners import Answer, ManyListeners, call_app
from blackwidow.core.settings import from_env
from sources.model import Item, SubscriberSpec
from spawn import registration, watchdog
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool

log = logging.getLogger("bench.simulated_nodes")

CALL_KINDS = [  # (method, path pattern, kind): what the counters are named by
    ("GET", re.compile(r"/subscribers"), "poll"),
    ("PUT", re.compile(r"/subscribers"), "put_batch"),
    ("DELETE", re.compile(r"/subscribers"), "delete_batch"),
    ("PUT", re.compile(r"/subscribers/\d+"), "put_one"),
    ("DELETE", re.compile(r"/subscribers/\d+"), "delete_one"),
    ("GET", re.compile(r"/healthz"), "healthz"),
]


class IdleSource:
    """A data source that fetches nothing: start, stop, attach and detach cost nothing."""

    def __init__(self, key: str) -> None:
        self.key = key

    def start(self, sink: object) -> None:
        pass

    def stop(self) -> None:
        pass

    def attach(self, spec: SubscriberSpec) -> None:
        pass

    def detach(self, crawler_id: int) -> None:
        pass

    def snapshot(self) -> list[Item]:
        return []


class NullSink:
    """A store that holds nothing and takes everything."""

    def add(
        self, items: Sequence[Item], ttl: int | None = None, id_ttl: int | None = None
    ) -> list[Item]:
        return list(items)

    def count(self, crawler_id: int) -> int:
        return 0


def call_kind(method: str, path: str) -> str:
    for known_method, pattern, kind in CALL_KINDS:
        if method == known_method and pattern.fullmatch(path):
            return kind
    return "other"


class EventCounter(logging.Handler):
    """Counts the node code's own log events by their message template (timers firing)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:  # called holding self.lock
        self.counts[" ".join(w for w in str(record.msg).split() if "=" not in w)] += 1

    def snapshot(self) -> dict[str, int]:
        with self.lock:  # type: ignore[union-attr]
            return dict(self.counts)


@dataclass
class SimulatedNode:
    url: str
    node: NodeState
    app: Any
    retry_at: float = 0.0
    failures: int = 0  # registrations failed in a row
    registrations: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Simulator:
    def __init__(self, hub_url: str, count: int, capacity: int, threads: int) -> None:
        self.settings = from_env()
        self.hub_url = hub_url
        self.capacity = capacity
        self.secret = self.settings.cluster_secret or ""
        self.calls: Counter[str] = Counter()
        self.app_cpu: Counter[str] = Counter()  # CPU seconds inside the node app, by call kind
        self._calls_lock = threading.Lock()
        self.stop = threading.Event()
        sockets = ManyListeners.bind(count)
        self.nodes: dict[int, SimulatedNode] = {}
        for listener in sockets:
            port = listener.getsockname()[1]
            pool = DataSourcePool(lambda key, spec: IdleSource(key), NullSink())
            node = NodeState(pool, clock=time.monotonic)
            app = create_node_app(node, self.settings.cluster_secret)
            self.nodes[port] = SimulatedNode(f"http://127.0.0.1:{port}", node, app)
        self.listeners = ManyListeners(self.serve, threads)
        self.listeners.start(sockets)

    def serve(self, port: int, environ: dict[str, Any]) -> Answer:
        started = time.thread_time()
        status, headers, body = call_app(self.nodes[port].app, environ)
        spent = time.thread_time() - started
        kind = call_kind(environ["REQUEST_METHOD"], environ["PATH_INFO"])
        with self._calls_lock:
            self.calls[kind] += 1
            self.calls[f"{kind} {status.split()[0]}"] += 1
            self.app_cpu[kind] += spent
        return status, headers, body

    def register(self, simulated: SimulatedNode) -> bool:
        """One registration attempt; on failure the node waits the real node's backoff."""
        with simulated.lock:
            try:
                node_id, generation = registration.register_once(
                    self.hub_url, simulated.url, self.capacity, self.secret
                )
            except (requests.RequestException, ValueError, KeyError) as error:
                simulated.failures += 1
                delay = registration.RETRY.delay(simulated.failures, random.random())
                simulated.retry_at = time.monotonic() + delay
                log.warning("registration failed url=%s error=%s", simulated.url, error)
                return False
            simulated.node.mark_registered(node_id, generation)
            simulated.failures = 0
            simulated.registrations += 1
            return True

    def register_all(self, deadline: float) -> None:
        with ThreadPoolExecutor(8) as pool:
            while time.monotonic() < deadline:
                waiting = [s for s in self.nodes.values() if not s.node.registered.is_set()]
                if not waiting:
                    return
                list(pool.map(self.register, waiting))
                time.sleep(0.2)
        raise SystemExit("simulated nodes: the hub did not take every registration in time")

    def keep_registered(self) -> None:
        """The registration loop of every node: a detached node registers again."""
        while not self.stop.wait(0.2):
            now = time.monotonic()
            for simulated in self.nodes.values():
                if not simulated.node.registered.is_set() and simulated.retry_at <= now:
                    self.register(simulated)

    def run_timers(self) -> None:
        """The watchdog of every node, once a second."""
        settings = self.settings
        while not self.stop.wait(1.0):
            for simulated in self.nodes.values():
                watchdog.check(simulated.node, settings.orphan_after, settings.detach_after)

    def stats(self, events: EventCounter) -> dict[str, Any]:
        times = os.times()
        with self._calls_lock:
            calls, app_cpu = dict(self.calls), dict(self.app_cpu)
        return {
            "calls": calls,
            "app_cpu_seconds": app_cpu,
            "cpu_seconds": times.user + times.system,
            "events": events.snapshot(),
            "nodes": [
                {
                    "url": s.url,
                    "node_id": s.node.node_id,
                    "registered": s.node.registered.is_set(),
                    "registrations": s.registrations,
                    "crawlers": sorted(status["crawler_id"] for status in s.node.pool.statuses()),
                }
                for s in self.nodes.values()
            ],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hub", required=True, help="the hub's base URL")
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--capacity", type=int, default=None, help="as each node reports it")
    parser.add_argument("--threads", type=int, default=4, help="threads running the node apps")
    parser.add_argument("--register-timeout", type=float, default=120.0)
    args = parser.parse_args()
    faulthandler.enable()  # a crash in native code leaves its stack in the log
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger().handlers[0].setLevel(logging.WARNING)  # the counter sees INFO too
    events = EventCounter()
    for name in ("spawn.watchdog", "spawn.node"):
        logging.getLogger(name).addHandler(events)
        logging.getLogger(name).setLevel(logging.INFO)
    capacity = args.capacity or from_env().node_capacity
    simulator = Simulator(args.hub, args.nodes, capacity, args.threads)
    simulator.register_all(time.monotonic() + args.register_timeout)
    for target in (simulator.keep_registered, simulator.run_timers):
        threading.Thread(target=target, daemon=True).start()
    print(json.dumps({"nodes": [s.url for s in simulator.nodes.values()]}), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        if line.strip() == "stats":
            print(json.dumps(simulator.stats(events)), flush=True)
    simulator.stop.set()
    simulator.listeners.stop()


if __name__ == "__main__":
    main()
