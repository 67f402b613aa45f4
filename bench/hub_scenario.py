"""One hub-at-scale scenario, measured: create, place, hold steady, lose 10% of the nodes.

The hub runs as real processes; the nodes are `bench.simulated_nodes` processes, the ones to
be killed in a process of their own so their death is a SIGKILL the hub cannot tell from a
real one. Figures come from the hub's API (`/api/v1/health`), /proc (CPU) and the simulated
nodes' own counts (calls served, crawlers held). A wait that reaches its deadline is noted
("did not settle within Xs") and the scenario goes on where it can.
"""

from __future__ import annotations

import json
import secrets
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from bench.crawler_clients import Creator
from bench.hub_processes import (
    Hub,
    Processes,
    SimulatedNodes,
    Unsettled,
    start_hub,
    start_procfile_hub,
    upgrade_database,
    wait_for,
)

CALL_KINDS = ("poll", "put_one", "put_batch", "delete_one", "delete_batch", "other")


@dataclass(frozen=True)
class Scenario:
    nodes: int
    crawlers: int
    database: str  # sqlite | postgres
    routing: str
    shards: int
    poll_interval: float = 2.0
    clients: int = 8
    batch: int = 0  # crawlers per create call (POST /api/v1/crawlers/batch); 0: one per call
    steady_window: float = 20.0
    settle_timeout: float = 300.0
    single_creates: int = 0  # then this many more, one per call, with the nodes placed and polled
    layout: str = "hub"  # hub: one `blackwidow hub`; procfile: gunicorn web + `blackwidow monitor`
    web_workers: int = 2

    def hub_shape(self) -> str:
        if self.layout == "hub":
            return "blackwidow hub"
        return f"web ({self.web_workers} workers) + monitor"

    @property
    def killed(self) -> int:
        return max(1, self.nodes // 10)

    def title(self) -> str:
        return (
            f"{self.nodes:,} nodes x {self.crawlers:,} crawlers, {self.database}, "
            f"{self.routing}, {self.shards} shard(s), {self.hub_shape()}"
            + (f", created {self.batch} a call" if self.batch else "")
        )


@dataclass
class Result:
    figures: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Run:
    """One scenario against the hub of one source tree."""

    def __init__(self, scenario: Scenario, tree: Path, database_url: str, work: Path) -> None:
        self.scenario = scenario
        self.tree = tree
        self.work = work
        self.result = Result()
        self.processes = Processes()
        self.http = requests.Session()
        self.http.trust_env = False
        self.admin_token = secrets.token_hex(16)
        self.env = {
            "BLACKWIDOW_DATABASE_URL": database_url,
            "BLACKWIDOW_STORE": f"sqlite:///{work / 'items.db'}",
            "BLACKWIDOW_CLUSTER_SECRET": secrets.token_hex(16),
            "BLACKWIDOW_ADMIN_TOKEN": self.admin_token,
            "BLACKWIDOW_POLL_INTERVAL": f"{scenario.poll_interval:g}",
            "BLACKWIDOW_ROUTING": scenario.routing,
            "BLACKWIDOW_MONITOR_SHARDS": str(scenario.shards),
        }
        self.hubs: list[Hub] = []
        self.survivors: SimulatedNodes | None = None
        self.victims: SimulatedNodes | None = None
        self.victims_killed = False
        self.crawler_ids: list[int] = []

    # -- measuring ------------------------------------------------------------------------

    def execute(self) -> Result:
        try:
            self._start()
            self._create()
            self._place()
            self._steady()
            self._single_creates()
            self._kill()
        except Unsettled as unsettled:
            self.result.notes.append(str(unsettled))
        finally:
            self.processes.stop_all()
            self._scan_logs()
        return self.result

    def _start(self) -> None:
        s = self.scenario
        if s.database == "postgres" or s.layout == "procfile":
            upgrade_database(self.tree, self.env, self.work / "upgrade.log")
        if s.layout == "procfile":
            self.hubs = [
                start_procfile_hub(self.processes, self.tree, self.env, self.work, n, s.web_workers)
                for n in range(s.shards)
            ]
        else:
            self.hubs = [
                start_hub(self.processes, self.tree, self.env, self.work, n)
                for n in range(s.shards)
            ]
        url = self.hubs[0].url
        node_env = {"BLACKWIDOW_CLUSTER_SECRET": self.env["BLACKWIDOW_CLUSTER_SECRET"]}
        self.survivors = SimulatedNodes(
            self.processes, url, s.nodes - s.killed, node_env, self.work / "nodes.log"
        )
        self.victims = SimulatedNodes(
            self.processes, url, s.killed, node_env, self.work / "victims.log"
        )
        wait_for(
            "nodes active", lambda: self.health()["nodes"].get("active", 0) >= s.nodes, 60, 0.5
        )

    def check_hubs(self) -> None:
        """A hub or simulated nodes that exited (other than the victims, killed on purpose)
        end the scenario: nothing after it would mean anything."""
        for hub in self.hubs:
            if (gone := hub.exited()) is not None:
                status = gone.returncode
                raise Unsettled(f"the hub exited with status {status}: see {hub.log}")
        expected = [self.survivors] if self.victims_killed else [self.survivors, self.victims]
        for nodes in expected:
            if nodes is not None and nodes.process.poll() is not None:
                status = nodes.process.returncode
                raise Unsettled(f"simulated nodes exited with status {status}, not killed here")

    def health(self) -> dict[str, Any]:
        self.check_hubs()
        try:
            response = self.http.get(f"{self.hubs[0].url}/api/v1/health", timeout=30)
            return response.json()
        except (requests.RequestException, ValueError) as error:
            self.check_hubs()
            raise Unsettled(f"GET /api/v1/health failed: {error}") from None

    def running(self) -> int:
        return self.health()["crawlers"].get("running", 0)

    def node_stats(self) -> tuple[dict[str, Any], ...]:
        return self.survivors.stats(), self.victims.stats()

    def _create(self) -> None:
        self.calls_before_create = self.node_stats()
        s = self.scenario
        creator = Creator(
            [h.url for h in self.hubs], self.admin_token, s.clients, s.crawlers, s.batch
        )
        creator.alive = lambda: all(hub.exited() is None for hub in self.hubs)
        figures = creator.run()
        self.result.figures.update(figures)
        self.crawler_ids = creator.ids
        self.created_at = time.monotonic()
        if creator.failures:
            self.result.notes.append(f"create answers other than 201: {dict(creator.failures)}")
        self.check_hubs()

    def _single_creates(self) -> None:
        """Creates one per call while every node is polled and the crawlers so far run: what
        an analyst waits for on a busy hub. They are placed before the nodes are killed."""
        s = self.scenario
        if not s.single_creates:
            return
        urls = [h.url for h in self.hubs]
        creator = Creator(urls, self.admin_token, s.clients, s.single_creates, name="single")
        creator.alive = lambda: all(hub.exited() is None for hub in self.hubs)
        figures = creator.run()
        self.result.figures.update({f"single_{key}": value for key, value in figures.items()})
        self.crawler_ids += creator.ids
        if creator.failures:
            self.result.notes.append(f"single creates: answers other than 201 {creator.failures}")
        m = len(self.crawler_ids)
        wait_for("single creates placed", lambda: self.running() >= m, s.settle_timeout, 0.5)

    def _place(self) -> None:
        m = len(self.crawler_ids)
        timeout = self.scenario.settle_timeout
        try:
            wait_for("initial placement", lambda: self.running() >= m, timeout, 0.5)
        except Unsettled:
            self.result.notes.append(
                f"initial placement: did not settle within {timeout:.0f}s"
                f" (crawlers by state: {self.health()['crawlers']})"
            )
            raise Unsettled("scenario stopped after placement") from None
        self.result.figures["placement_s"] = time.monotonic() - self.created_at
        calls = call_delta(self.calls_before_create, self.node_stats())
        pushes = {k: calls[k] for k in CALL_KINDS if k != "poll" and calls[k]}
        self.result.figures["placement_pushes"] = sum(pushes.values())
        self.result.notes.append(f"create and placement: push and remove calls {pushes}")

    def _steady(self) -> None:
        """Nothing changes: the cycle, the hub's CPU and the calls the nodes see, per cycle."""
        marker = lambda: cycle_marker(self.health()["monitor"])  # noqa: E731
        first = marker()
        wait_for("a steady cycle", lambda: marker() != first, 60, 0.5)
        window = Window(self)
        samples: list[dict[str, Any]] = []
        last = marker()
        cycles = 0
        while time.monotonic() - window.started < self.scenario.steady_window:
            time.sleep(1.0)
            monitor = self.health()["monitor"]
            if cycle_marker(monitor) != last:
                cycles, last = cycles + 1, cycle_marker(monitor)
                samples.append(monitor)
        window.close(cycles, samples, self.result)

    def _kill(self) -> None:
        s = self.scenario
        m = set(self.crawler_ids)
        survivors_before = self.survivors.stats()
        before = holders([survivors_before, self.victims.stats()])
        dead_urls = set(self.victims.urls)
        if len(before) < len(m):
            self.result.notes.append(f"before the kill {len(m) - len(before)} crawlers unheld")
        self.victims.kill()
        self.victims_killed = True
        killed_at = time.monotonic()
        dead = lambda: self.health()["nodes"].get("dead", 0) >= s.killed  # noqa: E731
        timeout = max(120.0, s.settle_timeout / 2)
        try:
            wait_for("dead nodes declared", dead, timeout, 0.5)
            self.result.figures["detect_s"] = time.monotonic() - killed_at
            after: dict[int, str] = {}

            def all_held() -> bool:
                stats = self.survivors.stats()
                after.clear()
                after.update(holders([stats]))
                twice = sum(len(node["crawlers"]) for node in stats["nodes"]) - len(after)
                return set(after) >= m and not twice and self.running() >= len(m)

            wait_for("crawlers running again", all_held, timeout, 1.0)
        except Unsettled as unsettled:
            self.result.notes.append(f"after the kill: {unsettled}; {self._state(m)}")
            return
        self.result.figures["recover_s"] = time.monotonic() - killed_at
        moved = [c for c in m if before.get(c) != after.get(c)]
        from_dead = [c for c in moved if before.get(c) in dead_urls]
        self.result.figures["moved"] = len(moved)
        self.result.figures["moved_extra"] = len(moved) - len(from_dead)
        survivors_after = self.survivors.stats()
        calls = call_delta((survivors_before,), (survivors_after,))
        pushes = {k: calls[k] for k in CALL_KINDS if k != "poll" and calls[k]}
        self.result.notes.append(f"recovery: push and remove calls to survivors {pushes}")
        events = survivors_after["events"]
        self.result.notes.append(f"node timer events on surviving nodes: {events}")
        self.result.notes.append(
            f"kill: {s.killed} nodes held {sum(1 for u in before.values() if u in dead_urls)}"
            f" crawlers; moved {len(moved)}, of them {len(moved) - len(from_dead)} from live nodes"
        )

    def _state(self, crawler_ids: set[int]) -> str:
        """Where things stand, for a wait that did not settle: the hub's view and the nodes'."""
        stats = self.survivors.stats()
        held = set(holders([stats])) & crawler_ids
        registered = sum(node["registered"] for node in stats["nodes"])
        try:
            health = self.health()
            hub = f"hub: crawlers {health['crawlers']}, nodes {health['nodes']}"
        except Unsettled as unsettled:
            hub = str(unsettled)
        return (
            f"surviving nodes hold {len(held)}/{len(crawler_ids)} crawlers, "
            f"{registered}/{len(stats['nodes'])} registered, timer events {stats['events']}; {hub}"
        )

    def _scan_logs(self) -> None:
        for hub in self.hubs:
            text = hub.log.read_text(errors="replace") if hub.log.exists() else ""
            errors = [line for line in text.splitlines() if " ERROR " in line]
            if errors or "Traceback" in text:
                self.result.notes.append(
                    f"{hub.log.name}: {len(errors)} ERROR lines, "
                    f"{text.count('Traceback')} tracebacks; first: {errors[:1]}"
                )
        for log in ("nodes.log", "victims.log"):
            text = (self.work / log).read_text(errors="replace")
            if "Traceback" in text:
                self.result.notes.append(f"{log}: {text.count('Traceback')} tracebacks")


class Window:
    """CPU and calls over a steady window, divided by the cycles run in it."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.cpu = sum(hub.cpu_seconds() for hub in run.hubs)
        self.nodes = run.node_stats()
        self.started = time.monotonic()

    def close(self, cycles: int, samples: list[dict[str, Any]], result: Result) -> None:
        elapsed = time.monotonic() - self.started
        cpu = sum(hub.cpu_seconds() for hub in self.run.hubs) - self.cpu
        nodes = self.run.node_stats()
        calls = call_delta(self.nodes, nodes)
        node_cpu = sum(b["cpu_seconds"] for b in nodes) - sum(a["cpu_seconds"] for a in self.nodes)
        figures = result.figures
        figures["cpu_share"] = cpu / elapsed
        if not cycles:
            result.notes.append(f"steady: no cycle ended in {elapsed:.0f}s")
            return
        period = cycle_period(samples) or elapsed / cycles
        per = period / elapsed  # the window's share that one cycle period is
        figures["cycle_period_s"] = period
        figures["cpu_per_cycle"] = cpu * per
        figures["calls_per_cycle"] = sum(calls[k] for k in CALL_KINDS) * per
        for name, values in numeric_fields(samples).items():
            figures[f"monitor.{name}"] = statistics.median(values)
        figures["cycle_s"] = figures.get("monitor.last_cycle_seconds")
        per_cycle = ", ".join(f"{k} {calls[k] * per:.4g}" for k in CALL_KINDS if calls[k])
        result.notes.append(
            f"steady: {cycles} cycles in {elapsed:.0f}s, one every {period:.2f}s; calls per"
            f" cycle {per_cycle}; the nodes served {calls['poll'] / elapsed:.0f} polls/s"
        )
        if calls["poll"]:
            figures["node_cpu_ms_per_call"] = 1000 * node_cpu / sum(calls[k] for k in CALL_KINDS)
            poll_cpu = sum(
                b.get("app_cpu_seconds", {}).get("poll", 0.0)
                - a.get("app_cpu_seconds", {}).get("poll", 0.0)
                for a, b in zip(self.nodes, nodes, strict=True)
            )
            figures["node_app_ms_per_poll"] = 1000 * poll_cpu / calls["poll"]


def cycle_period(samples: list[dict[str, Any]]) -> float | None:
    """Seconds from one cycle's end to the next, from the ends the samples saw."""
    ends = [datetime.fromisoformat(m["last_cycle_at"]) for m in samples if m.get("last_cycle_at")]
    if len(ends) < 2:
        return None
    return (ends[-1] - ends[0]).total_seconds() / (len(ends) - 1)


def cycle_marker(monitor: dict[str, Any]) -> str:
    """What changes when a cycle ends: its time, or (for other shapes) the whole entry."""
    return str(monitor.get("last_cycle_at") or json.dumps(monitor, sort_keys=True))


def numeric_fields(samples: list[dict[str, Any]], prefix: str = "") -> dict[str, list[float]]:
    """Every number in the monitor's health entries, by dotted name, across samples."""
    found: dict[str, list[float]] = {}
    for sample in samples:
        for key, value in sample.items():
            name = f"{prefix}{key}"
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float) and key.endswith("seconds"):
                found.setdefault(name, []).append(float(value))
            elif isinstance(value, dict):
                for inner, values in numeric_fields([value], f"{name}.").items():
                    found.setdefault(inner, []).extend(values)
            elif isinstance(value, list):
                entries = {str(i): v for i, v in enumerate(value) if isinstance(v, dict)}
                for inner, values in numeric_fields([entries], f"{name}.").items():
                    found.setdefault(inner, []).extend(values)
    return found


def holders(stats: list[dict[str, Any]]) -> dict[int, str]:
    """Crawler id -> the URL of a simulated node holding it."""
    return {c: node["url"] for s in stats for node in s["nodes"] for c in node["crawlers"]}


def call_delta(before: tuple[dict, ...], after: tuple[dict, ...]) -> Counter[str]:
    delta: Counter[str] = Counter()
    for a, b in zip(before, after, strict=True):
        for kind, count in b["calls"].items():
            delta[kind] += count - a["calls"].get(kind, 0)
    return delta
