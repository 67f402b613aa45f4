"""The hub at scale: N nodes and M crawlers against a real hub, beside a same-run baseline.

For each (nodes, crawlers, database, routing, shards) it prints the create rate and each create
call's time (p50, p90, p99, longest, answers other than 201) — as the crawlers are first made,
and again for `--single-creates` made one per call once all are placed and polled — the initial
placement time, the steady cycle, the hub's CPU per cycle and as a share of a core with nothing
changing, the HTTP calls per cycle the nodes see, and the time until every crawler runs again
after 10% of the nodes are killed (and how many crawlers moved) — for this tree and for the hub
at `--baseline-ref` (a git worktree of it), with the ratio. See bench/hub_scenario.py.

    .venv/bin/python -m bench.hub_scale --nodes 10 --crawlers 1000
    .venv/bin/python -m bench.hub_scale --sizes preset --database sqlite,postgres

Only 127.0.0.1; every process started is stopped at the end, on Ctrl-C or on error too.
Figures on a shared machine are noisy: the cycle is a median over the steady window.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

from bench import machine
from bench.hub_processes import (
    REPO,
    baseline_tree,
    fresh_database,
    postgres_server,
    raise_on_sigterm,
)
from bench.hub_scenario import Result, Run, Scenario

PRESET = [(10, 1000), (100, 10_000), (1000, 10_000), (1000, 100_000)]

# (label, figure, how it reads: "low" when less is better, "high" when more is)
ROWS = [
    ("create rate, crawlers/s", "create_rate", "high"),
    ("  in the first tenth", "create_rate_first", "high"),
    ("  in the last tenth", "create_rate_last", "high"),
    ("  a create call p50, ms", "create_p50_ms", "low"),
    ("  p90, ms", "create_p90_ms", "low"),
    ("  p99, ms", "create_p99_ms", "low"),
    ("  longest, ms", "create_max_ms", "low"),
    ("  answers other than 201", "create_not_2xx", "low"),
    ("then single creates, placed and polled: rate/s", "single_create_rate", "high"),
    ("  a create call p50, ms", "single_create_p50_ms", "low"),
    ("  p90, ms", "single_create_p90_ms", "low"),
    ("  p99, ms", "single_create_p99_ms", "low"),
    ("  longest, ms", "single_create_max_ms", "low"),
    ("  answers other than 201", "single_create_not_2xx", "low"),
    ("initial placement, s after the last create", "placement_s", "low"),
    ("  push and remove calls, create to placed", "placement_pushes", "low"),
    ("steady cycle, s (median)", "cycle_s", "low"),
    ("  one cycle every, s", "cycle_period_s", "low"),
    ("hub CPU per cycle, s", "cpu_per_cycle", "low"),
    ("hub CPU in steady state, cores", "cpu_share", "low"),
    ("HTTP calls per cycle", "calls_per_cycle", "low"),
    ("10% killed: declared dead after, s", "detect_s", "low"),
    ("10% killed: all running again after, s", "recover_s", "low"),
    ("10% killed: crawlers moved", "moved", "low"),
    ("  of them from live nodes", "moved_extra", "low"),
    ("simulated nodes' CPU per call served, ms", "node_cpu_ms_per_call", "low"),
    ("  of it in the node code answering a poll", "node_app_ms_per_poll", "low"),
]


def sizes(args: argparse.Namespace) -> list[tuple[int, int]]:
    if args.sizes == "preset":
        return PRESET
    if args.sizes:
        return [tuple(int(n) for n in size.split("x")) for size in args.sizes.split(",")]  # type: ignore[misc]
    return [(args.nodes, args.crawlers)]


def scenarios(args: argparse.Namespace) -> Iterator[Scenario]:
    for nodes, crawlers in sizes(args):
        for database in args.database.split(","):
            for routing in args.routing.split(","):
                yield Scenario(
                    nodes,
                    crawlers,
                    database,
                    routing,
                    args.shards,
                    clients=args.clients,
                    batch=args.batch,
                    steady_window=args.steady_window,
                    settle_timeout=args.settle_timeout,
                    single_creates=args.single_creates,
                    layout=args.layout,
                    web_workers=args.web_workers,
                )


def revision(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return done.stdout.strip()


class Bench:
    def __init__(self, args: argparse.Namespace, stack: ExitStack, work: Path) -> None:
        self.args = args
        self.stack = stack
        self.work = work
        self.postgres = None
        self.baseline: Path | None = None
        self.runs = 0

    def database(self, scenario: Scenario, run_dir: Path) -> str:
        if scenario.database == "sqlite":
            return f"sqlite:///{run_dir / 'hub.db'}"
        if self.postgres is None:
            self.postgres = self.stack.enter_context(postgres_server())
        return fresh_database(self.postgres, f"bench_{self.runs}")

    def measure(self, scenario: Scenario, tree: Path, name: str) -> Result:
        self.runs += 1
        run_dir = self.work / f"{self.runs:02d}-{name}"
        run_dir.mkdir()
        print(f"  running {name} ... (logs in {run_dir})", flush=True)
        return Run(scenario, tree, self.database(scenario, run_dir), run_dir).execute()

    def compare(self, scenario: Scenario) -> None:
        print(f"\n{scenario.title()}", flush=True)
        current = self.measure(scenario, REPO, "current")
        baseline = None
        if self.args.baseline_ref and scenario.crawlers <= self.args.baseline_max_crawlers:
            if self.baseline is None:
                self.baseline = self.stack.enter_context(baseline_tree(self.args.baseline_ref))
            # the hub before the monitor had a process of its own: one `blackwidow hub`
            one_shard = Scenario(**{**scenario.__dict__, "shards": 1, "layout": "hub"})
            baseline = self.measure(one_shard, self.baseline, "baseline")
        report(scenario, current, baseline, self.args.baseline_ref)


def cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"


def ratio(now: float | None, then: float | None, reads: str) -> str:
    """How many times better this tree is than the baseline (above 1: better)."""
    if now is None or then is None:
        return "-"
    better, worse = (now, then) if reads == "high" else (then, now)
    if worse == 0:
        return "-" if better == 0 else "inf"
    return f"{better / worse:.2f}x"


def report(scenario: Scenario, current: Result, baseline: Result | None, ref: str) -> None:
    print(f"\n{scenario.title()}")
    head = f"  {'':44} {'this tree':>12}"
    if baseline is not None:
        head += f" {'baseline ' + ref:>18} {'better by':>10}"
    print(head)
    for label, key, reads in ROWS:
        line = f"  {label:44} {cell(current.figures.get(key)):>12}"
        if baseline is not None:
            then = baseline.figures.get(key)
            line += f" {cell(then):>18} {ratio(current.figures.get(key), then, reads):>10}"
        print(line)
    extra = sorted(k for k in current.figures if k.startswith("monitor."))
    for key in extra:
        print(f"  {key + ', s (median)':44} {cell(current.figures[key]):>12}")
    for name, result in (("this tree", current), ("baseline", baseline)):
        for note in result.notes if result else ():
            print(f"  [{name}] {note}")
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--crawlers", type=int, default=1000)
    parser.add_argument("--sizes", help="NxM[,NxM...] or 'preset' (10x1000 .. 1000x100000)")
    parser.add_argument("--database", default="sqlite", help="sqlite, postgres or both (a,b)")
    parser.add_argument("--routing", default="modulo", help="modulo, rendezvous, weighted (a,b)")
    parser.add_argument("--shards", type=int, default=1, help="monitor shards = hub processes")
    parser.add_argument("--clients", type=int, default=8, help="threads creating crawlers")
    parser.add_argument(
        "--batch", type=int, default=0, help="crawlers per create call (the batch endpoint)"
    )
    parser.add_argument(
        "--single-creates",
        type=int,
        default=2000,
        help="then this many created one per call, timed, with every node polled (0: none)",
    )
    parser.add_argument("--steady-window", type=float, default=20.0, help="seconds")
    parser.add_argument("--settle-timeout", type=float, default=300.0, help="seconds per wait")
    parser.add_argument(
        "--layout",
        default="procfile",
        choices=["procfile", "hub"],
        help="procfile: gunicorn web + `blackwidow monitor`; hub: one `blackwidow hub`",
    )
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers (procfile)")
    parser.add_argument("--baseline-ref", default="b1342c4", help="'' for no baseline")
    parser.add_argument("--baseline-max-crawlers", type=int, default=1000)
    parser.add_argument("--work", type=Path, help="keep logs here (default: a temp dir)")
    args = parser.parse_args()
    raise_on_sigterm()
    print(f"{machine.described()}; tree {revision(REPO)}; poll interval 2 s")
    with ExitStack() as stack:
        work = args.work or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hub-")))
        work.mkdir(parents=True, exist_ok=True)
        bench = Bench(args, stack, work)
        for scenario in scenarios(args):
            bench.compare(scenario)


if __name__ == "__main__":
    main()
