"""Feeds parsed in a node's worker processes (sources.fetch.workers, sources.rss.parse_job) give
what a parse in the node's own process gives, and a worker that dies costs one job only."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sources.fetch.workers import WorkerLost, WorkerProcesses
from sources.rss.parse import FeedError, parse_feed
from sources.rss.parse_job import parse_elsewhere
from sources.url_keys import DEFAULT_KEYS
from tests.servers.feed_corpus import MANIFEST, REAL
from tests.support import wait_until

FETCHED_AT = datetime(2024, 5, 1, tzinfo=UTC)
LATER = datetime(2024, 5, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def workers() -> Iterator[WorkerProcesses]:
    pool = WorkerProcesses(2, preload=["sources.rss.parse_job"])
    yield pool
    pool.close()


def _both_ways(workers: WorkerProcesses, name: str, known: dict[str, Any]) -> tuple[Any, Any]:
    body = (REAL / name).read_bytes()
    headers = {"Content-Type": MANIFEST[name]}
    url = f"https://feeds.example/{name}"
    answers = []
    for parse in (
        lambda: parse_feed(body, url, LATER, headers, known, DEFAULT_KEYS),
        lambda: parse_elsewhere(workers, body, url, LATER, headers, known, DEFAULT_KEYS),
    ):
        try:
            answers.append(parse())
        except FeedError as error:
            answers.append(f"FeedError: {error}")
    return answers[0], answers[1]


def test_every_real_feed_parses_the_same_in_a_worker(workers: WorkerProcesses) -> None:
    for name in sorted(MANIFEST):
        here, there = _both_ways(workers, name, {})

        assert there == here, name


def test_known_items_come_back_as_the_node_s_own(workers: WorkerProcesses) -> None:
    """An entry the feed had last time is the node's item object, with its first fetched_at;
    only the entries new to the feed are items made in the worker."""
    name = "rssparser-guardian.rss"
    url = f"https://feeds.example/{name}"
    headers = {"Content-Type": MANIFEST[name]}
    first = parse_feed((REAL / name).read_bytes(), url, FETCHED_AT, headers).items
    assert len(first) >= 2
    known = {item.id: item for item in first[1:]}

    items, _, _ = parse_elsewhere(
        workers, (REAL / name).read_bytes(), url, LATER, headers, known, DEFAULT_KEYS
    )

    assert [item.id for item in items] == [item.id for item in first]
    assert all(again is known[again.id] for again in items[1:])
    assert items[0] == dataclasses.replace(first[0], fetched_at=LATER)


def test_a_worker_that_dies_fails_its_job_only(workers: WorkerProcesses) -> None:
    with pytest.raises(WorkerLost):
        workers.run(os._exit, 1)

    assert workers.run(os.getpid) != os.getpid()  # a new worker took the next job


def test_a_dying_worker_is_the_feed_s_error_not_the_node_s(workers: WorkerProcesses) -> None:
    name = sorted(MANIFEST)[0]
    body = (REAL / name).read_bytes()
    victim = workers.run(os.getpid)
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{victim}/status"), timeout=10)

    answers = []
    for _ in range(2):  # the first may meet the dead worker's pool; the next has new workers
        try:
            answers.append(
                parse_elsewhere(workers, body, "https://f.example/", LATER, {}, {}, DEFAULT_KEYS)
            )
        except FeedError as error:
            answers.append(str(error))

    assert answers[-1] == parse_feed(body, "https://f.example/", LATER, {})


def test_workers_end_with_a_node_killed_with_sigkill(tmp_path: Path) -> None:
    """The pool's pipes would keep its workers and their fork server alive for ever."""
    script = tmp_path / "node.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            from sources.fetch.workers import WorkerProcesses

            if __name__ == "__main__":
                pool = WorkerProcesses(2)
                pids = {pool.run(os.getpid) for _ in range(20)}
                print(" ".join(map(str, pids)), flush=True)
                sys.stdin.read()
            """
        )
    )
    node = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert node.stdout is not None
        worker_pids = [int(pid) for pid in node.stdout.readline().split()]
        assert worker_pids
        children = _descendants(node.pid)
        assert set(worker_pids) <= children
    finally:
        node.kill()
        node.wait()

    wait_until(lambda: not any(_alive(pid) for pid in children), timeout=10)


def _descendants(pid: int) -> set[int]:
    """Every process below `pid`, however re-parented later (read while it lives)."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _ancestry_has(int(entry), pid):
            found.add(int(entry))
    return found


def _ancestry_has(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == ancestor:
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
