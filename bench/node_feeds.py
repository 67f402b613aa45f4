"""A node at scale: K RSS crawlers on one real node, one feed each, first round and steady state.

One `blackwidow spawn` process (SQLite store, defaults but for the feed interval, the
loopback allowance and, the farm being one host, host politeness opened to the fetchers)
fetches from bench.feed_farm (K feeds on 127.0.0.1, 10-60 KB, 20-50 items, ETag; a share
of the feeds changes once per interval, so about 80% of polls are 304s). No hub runs: this
script stands in for it through the node protocol — it answers the node's registration,
pushes the K subscribers in batch `PUT /subscribers` calls, and polls `GET /subscribers`
once a second (timing each poll while the node is busy), as the hub's monitor would.

Printed: first round (every crawler has stored items) wall time and node CPU; then, from
one interval later (feeds polled early in a long first round come due during it), over a
steady window, polls per second, the share of 304s, CPU per 1,000 polls and in cores (of
the node, its own process and its parse workers, and of the whole host, the farm
included), threads per process, peak memory, poll latency p50/p99, and the longest a due
feed started after its due time (the scheduler's own figure, from the node's /healthz).

The baseline, in the same run over the same feeds: the same node parsing in its own
interpreter (`BLACKWIDOW_PARSE_WORKERS=0`), as every node did before it had workers.

    .venv/bin/python -m bench.node_feeds [--feeds 2000 10000 20000] [--steady 120]
        [--interval 60] [--fetchers 32] [--no-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

from bench import machine

SECRET = "bench-node-feeds"
HEADERS = {"Authorization": f"Bearer {SECRET}", "X-Blackwidow-Generation": "1"}
BATCH = 1000
TICK = os.sysconf("SC_CLK_TCK")
SETTLE = 30.0  # seconds at least after the first round before the steady window opens
LATE_WINDOW = 35.0  # the node's late_recent spans 30 s in 5 s buckets


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far, from /proc (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def descendants(pid: int) -> set[int]:
    """The processes below `pid` (a node's fork server and parse workers)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


class TreeCpu:
    """CPU seconds of a process and its descendants since this was made."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = {p: proc_cpu(p) for p in {pid} | descendants(pid)}

    def used(self) -> tuple[float, float]:
        """(the process's own, its descendants') CPU seconds since the start."""
        pids = {self.pid} | descendants(self.pid)
        spent = {p: proc_cpu(p) - self.start.get(p, 0.0) for p in pids}
        own = spent.pop(self.pid)
        return own, sum(spent.values())


def host_busy() -> float:
    """CPU seconds the whole host has been busy so far (every core), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / TICK


def proc_status(pid: int) -> dict[str, int]:
    """Threads and peak resident memory (KiB) of a process."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {"threads": 0, "peak_kib": 0}
    values = dict(line.split(":", 1) for line in text.splitlines())
    return {"threads": int(values["Threads"]), "peak_kib": int(values["VmHWM"].split()[0])}


def tree_status(pid: int) -> dict[str, int]:
    """The most threads of any one process of a node, and the peak memory of all of them."""
    statuses = [proc_status(p) for p in {pid} | descendants(pid)]
    return {
        "threads": max(status["threads"] for status in statuses),
        "peak_kib": sum(status["peak_kib"] for status in statuses),
    }


@contextmanager
def started(command: list[str], env: dict[str, str], log: Path) -> Iterator[tuple[Any, str]]:
    """A child process whose first line of stdout is its URL."""
    with open(log, "w") as errors:
        child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        try:
            url = child.stdout.readline().strip()
            if not url.startswith("http"):
                raise RuntimeError(f"{command[2:4]} did not start: see {log}")
            yield child, url
        finally:
            child.terminate()
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                print(f"  ({command[2:4]} did not stop within 60 s of SIGTERM: killed)")
                child.kill()
                child.wait()


@contextmanager
def fake_hub() -> Iterator[str]:
    """Answers a node's registration (id 1, generation 1); nothing else."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"id": 1, "generation": 1}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


class Poller:
    """The hub's part: polls the node every second, timing each answer, keeping the counts."""

    def __init__(self, node_url: str) -> None:
        self.node_url = node_url
        self.session = requests.Session()
        self.cursor: str | None = None
        self.collected: dict[int, int] = {}
        self.latencies: list[tuple[float, float]] = []  # (at, seconds)
        self.stop = threading.Event()

    def poll(self) -> None:
        headers = dict(HEADERS, **({"X-Blackwidow-Since": self.cursor} if self.cursor else {}))
        started_at = time.monotonic()
        answer = self.session.get(f"{self.node_url}/subscribers", headers=headers, timeout=30)
        self.latencies.append((started_at, time.monotonic() - started_at))
        body = answer.json()
        self.cursor = body["cursor"]
        for status in body["subscribers"]:
            self.collected[status["crawler_id"]] = status["items_collected"] or 0

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.poll()


def push(node_url: str, farm_url: str, feeds: int) -> None:
    session = requests.Session()
    for start in range(0, feeds, BATCH):
        specs = [
            {
                "crawler_id": n + 1,
                "user_id": 1,
                "source": "rss",
                "query": {"feeds": [f"{farm_url}/f/{n}.xml"], "keywords": []},
            }
            for n in range(start, min(feeds, start + BATCH))
        ]
        answer = session.put(
            f"{node_url}/subscribers", json={"subscribers": specs}, headers=HEADERS, timeout=120
        )
        answer.raise_for_status()


def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)


def node_env(tmp: Path, interval: float, fetchers: int, workers: int | None) -> dict[str, str]:
    """The node's settings; `workers` None leaves its parse workers at their default."""
    chosen = {} if workers is None else {"BLACKWIDOW_PARSE_WORKERS": str(workers)}
    return {
        **chosen,
        **os.environ,
        "BLACKWIDOW_CLUSTER_SECRET": SECRET,
        "BLACKWIDOW_STORE": f"sqlite:///{tmp / 'items.db'}",
        "BLACKWIDOW_FETCH_ALLOW": "127.0.0.1",
        "BLACKWIDOW_FEED_INTERVAL": str(interval),
        "BLACKWIDOW_FETCHERS": str(fetchers),
        "BLACKWIDOW_HOST_CONCURRENCY": str(fetchers),  # the whole farm is one host
        "BLACKWIDOW_HOST_GAP": "0",
    }


def run_node(
    farm_url: str, feeds: int, args: argparse.Namespace, tmp: Path, workers: int | None
) -> dict[str, Any]:
    env = node_env(tmp, args.interval, args.fetchers, workers)
    farm = requests.Session()
    with fake_hub() as hub_url:
        command = [sys.executable, "-m", "blackwidow", "spawn", "--hub", hub_url, "--port", "0"]
        with started(command, env, tmp / "node.log") as (node, node_url):
            health = lambda: requests.get(f"{node_url}/healthz", timeout=30).json()  # noqa: E731
            wait_for(lambda: health()["registered"], 30, "registration")
            poller = Poller(node_url)
            cpu_at_start, started_at = TreeCpu(node.pid), time.monotonic()
            ticker = threading.Thread(
                target=advance_every, args=(farm_url, args.interval, poller.stop)
            )
            ticker.start()
            polling = threading.Thread(target=poller.run, daemon=True)  # confirms what it saw
            polling.start()
            push(node_url, farm_url, feeds)
            wait_for(
                lambda: sum(1 for c in list(poller.collected.values()) if c > 0) >= feeds,
                args.first_round_limit,
                "the first round",
            )
            first = {
                "wall": time.monotonic() - started_at,
                "cpu": sum(cpu_at_start.used()),
            }
            # Feeds fetched during the first round all come due again within one interval of
            # its end: until then the node still works through the first round's wave.
            time.sleep(max(SETTLE, args.interval))
            steady = measure_steady(node.pid, farm, farm_url, poller, health, args.steady)
            poller.stop.set()
            ticker.join()
            polling.join()
            # waitress keeps serving while a client holds a kept-alive connection, SIGTERM or not
            poller.session.close()
            return {"first": first, **steady, **tree_status(node.pid)}


def advance_every(farm_url: str, interval: float, stop: threading.Event) -> None:
    while not stop.wait(interval):
        requests.post(f"{farm_url}/advance", timeout=30)


def measure_steady(
    pid: int, farm: requests.Session, farm_url: str, poller: Poller, health: Any, window: float
) -> dict[str, Any]:
    before, node_cpu, at = farm.get(f"{farm_url}/stats").json(), TreeCpu(pid), time.monotonic()
    host_before = host_busy()
    late: list[float] = []
    threads = 0
    while time.monotonic() - at < window:
        time.sleep(5.0)
        threads = max(threads, tree_status(pid)["threads"])
        if time.monotonic() - at >= LATE_WINDOW:  # late_recent covers the last 30-35 s
            late.append(health()["scheduler"]["late_recent"])
    after, (own, workers) = farm.get(f"{farm_url}/stats").json(), node_cpu.used()
    host = host_busy() - host_before
    elapsed = time.monotonic() - at
    polls = after["requests"] - before["requests"]
    latencies = sorted(s for t, s in poller.latencies if t >= at)
    return {
        "polls_per_s": polls / elapsed,
        "share_304": (after["304"] - before["304"]) / max(1, polls),
        "cpu_per_1000": 1000 * (own + workers) / max(1, polls),
        "own_cores": own / elapsed,
        "worker_cores": workers / elapsed,
        "host_cores": host / elapsed,
        "poll_p50": statistics.median(latencies),
        "poll_p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "late_max": max(late, default=float("nan")),
        "threads_max": threads,
    }


def report(feeds: int, interval: float, runs: dict[str, dict[str, Any]]) -> None:
    wanted = feeds / interval
    print(f"\n{feeds} feeds, one crawler each, interval {interval:g}s: {wanted:.0f} polls/s wanted")
    for name, run in runs.items():
        first = run["first"]
        print(
            f"  {name}: first round {first['wall']:.1f}s wall, {first['cpu']:.1f}s CPU; "
            f"steady {run['polls_per_s']:.1f} polls/s ({run['share_304']:.0%} 304), "
            f"{run['cpu_per_1000']:.2f} CPU s per 1,000 polls"
        )
        print(
            f"    cores: node {run['own_cores']:.2f} + parse workers {run['worker_cores']:.2f}; "
            f"host, farm included, {run['host_cores']:.2f} of {os.cpu_count()}; "
            f"{run['threads_max']} threads at most in a process; "
            f"peak {run['peak_kib'] / 1024:.0f} MiB"
        )
        print(
            f"    poll latency p50 {run['poll_p50'] * 1000:.0f} ms, "
            f"p99 {run['poll_p99'] * 1000:.0f} ms; longest start past due {run['late_max']:.2f}s"
        )
    if len(runs) == 2:
        node, base = runs.values()
        print(
            f"  node/baseline: first round {node['first']['wall'] / base['first']['wall']:.2f}, "
            f"steady polls/s {node['polls_per_s'] / base['polls_per_s']:.2f}, "
            f"poll p99 {node['poll_p99'] / base['poll_p99']:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--feeds", type=int, nargs="+", default=[2000, 10_000, 20_000])
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between polls")
    parser.add_argument("--steady", type=float, default=120.0, help="seconds of steady window")
    parser.add_argument("--fetchers", type=int, default=32)
    parser.add_argument("--first-round-limit", type=float, default=900.0)
    parser.add_argument("--no-baseline", action="store_true", help="only the node with workers")
    args = parser.parse_args()
    print(f"{machine.described()}, load average {os.getloadavg()[0]:.1f}; fetchers {args.fetchers}")
    variants: dict[str, int | None] = {"node": None}
    if not args.no_baseline:
        variants["baseline, parsing in the node's process"] = 0
    for feeds in args.feeds:
        runs = {}
        for name, workers in variants.items():
            with tempfile.TemporaryDirectory() as scratch:
                tmp = Path(scratch)
                farm_command = [sys.executable, "-m", "bench.feed_farm", "--feeds", str(feeds)]
                with started(farm_command, dict(os.environ), tmp / "farm.log") as (_, farm_url):
                    runs[name] = run_node(farm_url, feeds, args, tmp, workers)
        report(feeds, args.interval, runs)


if __name__ == "__main__":
    main()
