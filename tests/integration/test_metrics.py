"""The hub's `/metrics` as production runs it (gunicorn, two workers, one leading the
monitor): every scrape, whichever worker answers it, shows the same cluster figures, the
monitor's counters never go back, and the API's request counts are every worker's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Cluster
from tests.support import wait_until

SCRAPES = 20  # each over a new connection, taken by either worker


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _scrape(hub_url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, labels) -> value, over a new connection."""
    text = requests.get(f"{hub_url}/metrics", timeout=10).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _of(samples: dict, prefix: str) -> dict[Any, float]:
    return {key: value for key, value in samples.items() if key[0].startswith(prefix)}


def _start_gunicorn(c: Cluster, tmp_path) -> str:
    env = {**os.environ, **c.env, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    subprocess.run([sys.executable, "-m", "blackwidow", "db", "upgrade"], env=env, check=True)
    port = _free_port()
    log_path = tmp_path / "gunicorn.log"
    with open(log_path, "w") as log:
        hub = subprocess.Popen(
            [
                *(sys.executable, "-m", "gunicorn", "-c", "python:blackwidow.gunicorn_conf"),
                *("-w", "2", "-b", f"127.0.0.1:{port}", "blackwidow.wsgi:app"),
            ],
            env=env,
            stderr=log,
            stdout=log,
        )
    hub_url = f"http://127.0.0.1:{port}"
    c.hub = c.adopt(type(c.feeds)("hub", hub, hub_url, log_path))  # c.stop() stops it
    return hub_url


def test_every_gunicorn_worker_serves_the_same_cluster_figures(tmp_path):
    c = Cluster(tmp_path, {})
    try:
        hub_url = _start_gunicorn(c, tmp_path)

        def answers() -> bool:
            try:
                return requests.get(f"{hub_url}/healthz", timeout=2).ok
            except requests.RequestException:  # refused, or a worker still booting under load
                return False

        wait_until(answers, what="gunicorn to answer")
        c.add_node()
        c.wait_for_nodes(1)
        token = c.user()
        crawler = c.crawler(token, [c.feed("metrics", items=4)])
        wait_until(lambda: len(c.items(token, crawler["id"])) == 4, what="items")
        wait_until(
            lambda: _scrape(hub_url).get(("blackwidow_crawlers", (("state", "running"),))) == 1,
            what="the crawler shown running",
        )

        files = tmp_path / "metrics"
        wait_until(
            lambda: _scrape(hub_url) and len(list(files.glob("histogram_*.db"))) == 2,
            what="both workers to have answered a request",
        )
        scrapes = [_scrape(hub_url) for _ in range(SCRAPES)]
        cluster = ("blackwidow_nodes", "blackwidow_crawlers")  # steady now: any change is a lie
        firsts = {prefix: _of(scrapes[0], prefix) for prefix in cluster}
        for samples in scrapes:
            assert {prefix: _of(samples, prefix) for prefix in cluster} == firsts
        assert firsts["blackwidow_nodes"][("blackwidow_nodes", (("state", "active"),))] == 1

        cycles = [s[("blackwidow_monitor_cycle_seconds_count", ())] for s in scrapes]
        assert cycles[0] > 0 and cycles == sorted(cycles)  # the leader's figures, from any worker
        scraped = (("method", "GET"), ("route", "/metrics"), ("status", "200"))
        counts = [
            s.get(("blackwidow_http_request_duration_seconds_count", scraped), 0) for s in scrapes
        ]
        assert counts == sorted(counts)
        assert counts[-1] - counts[0] == SCRAPES - 1  # each scrape counted, whichever worker
    finally:
        c.stop()
