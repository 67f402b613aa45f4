"""What a hub or node process says of itself on `/metrics`: its build (Black Widow's version
and Python's), and, where one process answers every scrape, its CPU, memory, open files and
garbage collections, through prometheus-client's own collectors.

Under gunicorn a scrape reaches whichever worker accepts it, and prometheus-client's process
and GC collectors describe that worker alone: one worker's CPU seconds or memory shown as the
hub's would jump between workers from scrape to scrape, a counter that goes back with no
restart. So a hub under gunicorn shows neither; its processes' CPU and memory are the host's
or container's figures to read (node_exporter, cAdvisor). The build is every worker's alike.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from importlib.metadata import version

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import InfoMetricFamily
from prometheus_client.registry import Collector, Metric

PACKAGE = "blackwidow"


def describe_process(registry: CollectorRegistry, answers_alone: bool) -> None:
    """Add the build to `registry`, and Python's version (`python_info`); when this process
    `answers_alone` every scrape, also its `process_*` and `python_gc_*` figures."""
    registry.register(BuildInfo())
    PlatformCollector(registry=registry)
    if answers_alone:
        ProcessCollector(registry=registry)
        GCCollector(registry=registry)


class BuildInfo(Collector):
    """`blackwidow_build_info{version, python} 1`: which release and Python a process runs,
    to join onto its other figures or to count a rolling upgrade's progress."""

    def __init__(self) -> None:
        self._labels = {"version": version(PACKAGE), "python": platform.python_version()}

    def collect(self) -> Iterator[Metric]:
        yield InfoMetricFamily(
            "blackwidow_build", "The Black Widow release and Python this process runs", self._labels
        )
