"""The hub's `/metrics` as production runs it (gunicorn, two workers, one leading the
monitor): every scrape, whichever worker answers it, shows the same cluster figures, the
monitor's counters never go back, the API's request counts are every worker's, and the
build shows where no one worker's CPU, memory or GC figures stand for the hub's."""

from __future__ import annotations

import platform
from importlib.metadata import version
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Cluster
from tests.support import wait_until

SCRAPES = 20  # each over a new connection, taken by either worker


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


def test_every_gunicorn_worker_serves_the_same_cluster_figures(tmp_path):
    c = Cluster(tmp_path, {})
    try:
        hub_url = c.start_gunicorn_hub(2, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics")).url
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
        build = (("python", platform.python_version()), ("version", version("blackwidow")))
        for samples in scrapes:
            assert {prefix: _of(samples, prefix) for prefix in cluster} == firsts
            assert samples[("blackwidow_build_info", build)] == 1
            # one worker's CPU, memory and GC would stand for the hub's: none is shown
            assert not _of(samples, "process_") and not _of(samples, "python_gc_")
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
