"""The hub's `/metrics`: the cluster's figures from SQL, the database's and the store's
answering, and the API's request times.

Request times are per process. Under gunicorn (blackwidow.gunicorn_conf), prometheus-client's
multiprocess mode keeps each worker's in files of one directory, and a scrape of any worker
sums them all; the cluster's figures are read from SQL by whichever worker is scraped, never
summed, so they are the same everywhere. The process's own figures (CPU, memory, GC) are
left out there: one worker's would stand for the hub's (blackwidow.core.metrics.process).
"""

from __future__ import annotations

from flask import Flask
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.core.metrics.exposition import MetricsAccess, serve_metrics
from blackwidow.core.metrics.process import describe_process
from blackwidow.core.settings import Settings
from blackwidow.core.store import Store
from blackwidow.metrics.cluster import ClusterCollector
from blackwidow.metrics.http import measure_requests


def serve_hub_metrics(
    app: Flask, sessions: sessionmaker[Session], store: Store, settings: Settings
) -> None:
    """Add `/metrics` to the hub app: request times measured here, cluster figures from SQL,
    the database and `store` as this process finds them."""
    own = CollectorRegistry()
    measure_requests(app, own)
    scraped = own
    if settings.metrics_dir is not None:
        scraped = CollectorRegistry()
        MultiProcessCollector(scraped, path=settings.metrics_dir)
    describe_process(scraped, answers_alone=settings.metrics_dir is None)
    scraped.register(ClusterCollector(sessions, store, settings.monitor_shards))
    serve_metrics(app, scraped, MetricsAccess.of(settings))
