"""Wires a node together: store, guarded fetcher, pool, HTTP face, registration and timers."""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from blackwidow.core import serving
from blackwidow.core.metrics.exposition import MetricsAccess
from blackwidow.core.node_protocol import REPLAY_WINDOW
from blackwidow.core.settings import Settings
from blackwidow.core.store import Store
from sources.credentials import CredentialBook
from sources.fetch.fetcher import GuardedFetcher
from sources.fetch.scheduler import FetchScheduler
from sources.fetch.workers import WorkerProcesses
from sources.registry import opener
from sources.source_type import SourceContext
from spawn import registration, watchdog
from spawn.app import create_node_app
from spawn.load import ProcessLoad
from spawn.metrics import NodeMetrics
from spawn.node import NodeState, NotJoined
from spawn.output.node_file import NodeFileInUse
from spawn.output.opening import Output, open_output
from spawn.pool.renewals import Renewals
from spawn.pool.source_pool import DataSourcePool

log = logging.getLogger(__name__)

# Seconds a thread keeps the interpreter while others wait for it (Python's default: 0.005).
# Dozens of fetchers run Python at once on a busy node, and a thread answering the hub's poll
# waits its turn among them at each step: a shorter turn answers polls sooner
# (bench/node_feeds.py).
SWITCH_INTERVAL = 0.001
# poll intervals a leaving node waits for the hub to move its crawlers off and apply their
# final counts (two or three do it); past that, or three without a poll, it stops anyway
LEAVE_POLLS = 10


def run_node(
    settings: Settings, hub_url: str, host: str, port: int, advertise_url: str | None
) -> None:
    """Serve a node until it is told to stop, then leave (docs/architecture.md "How a crawler
    runs", steps 2, 4, 5 and 7; docs/node-protocol.md "Leaving")."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    metrics = NodeMetrics()
    output = open_output(settings, host, port, metrics)
    sink = output.sink
    credentials = CredentialBook(settings.credentials)
    scheduler = FetchScheduler(
        fetchers=settings.fetchers,
        host_limit=settings.host_concurrency,
        host_gap=settings.host_gap,
    )
    fetcher = GuardedFetcher(
        allow_hosts=settings.fetch_allow,
        deadline=settings.fetch_deadline,
        per_host=settings.host_concurrency,
        observer=metrics,
    )
    workers = parse_workers(settings)
    context = SourceContext(
        fetcher=fetcher,
        feed_interval=settings.feed_interval,
        credentials=credentials,
        search_interval=settings.search_interval,
        rate_limit_wait=settings.rate_limit_wait,
        scheduler=scheduler,
        observer=metrics,
        workers=workers,
    )
    pool = DataSourcePool(
        opener(context),
        sink,
        buffer=settings.node_buffer,
        renewals=Renewals(time.monotonic),
        observer=metrics,
        seen_after=seen_after(settings, output.store),
    )
    metrics.watch(pool, output.outbox_stats if output.queue is not None else None)

    def health() -> dict[str, Any]:
        return {**sink.health(), "scheduler": scheduler.stats()}

    def held() -> int:
        """Items waiting for a store or queue that is down (the hub's node.holding alert);
        items a subscriber keeps while it waits for a bigger lease, or for a poll to renew
        a lapsed one, do not count."""
        sink_health = sink.health()
        queued = sink_health["queue"]["pending"] if sink_health["queue"] else 0
        return queued + (0 if sink_health["store"]["ok"] else pool.held())

    node = NodeState(
        pool,
        clock=time.monotonic,
        health=health,
        held=held,
        load=ProcessLoad(),
        join=joining(output, pool),
        probe_store=lambda: None if pool.writes_waiting() else sink.probe(),
    )
    app = create_node_app(
        node, settings.cluster_secret, credentials, metrics, MetricsAccess.of(settings)
    )
    server, url = serving.bind(app, host, port)
    stop = threading.Event()
    secret = settings.cluster_secret or ""
    threads = [
        threading.Thread(
            target=registration.keep_registering,
            args=(node, hub_url, advertise_url or url, settings.node_capacity, secret, stop),
            name="registration",
            daemon=True,
        ),
        threading.Thread(
            target=watchdog.run,
            args=(node, settings.orphan_after, settings.detach_after, stop),
            name="watchdog",
            daemon=True,
        ),
    ]
    scheduler.start()
    if workers is not None:
        workers.start()
    connect_store(output.store)
    for thread in threads:
        thread.start()

    def _leave() -> None:
        """SIGTERM or SIGINT: hand the crawlers on while the server still answers polls."""
        stop.set()  # registers no more: a node fenced off meanwhile just goes
        interval = settings.poll_interval
        registration.leave(node, hub_url, secret, LEAVE_POLLS * interval, 3 * interval + 1)

    def _shutdown() -> None:
        stop.set()
        node.pool.clear()
        scheduler.stop()
        if workers is not None:
            workers.close()
        output.close()

    serving.run(server, url, on_stop=_shutdown, drain=_leave)


def joining(output: Output, pool: DataSourcePool) -> Callable[[str], None]:
    """What the node does once it knows its cluster, before it takes a hub call: open that
    cluster's files (the outbox replays its spool), then report the runs the ledger kept as
    stopped ones (docs/node-protocol.md "Registration")."""

    def join(cluster_id: str) -> None:
        try:
            ledger = output.join(cluster_id)
        except (OSError, sqlite3.Error, NodeFileInUse) as error:
            raise NotJoined(f"the node's files cannot be opened ({error})") from error
        if ledger is not None:
            left = ledger.left(since=time.time() - REPLAY_WINDOW)
            pool.ledger = ledger
            pool.restore_departed(left)
            log.info("ledger restored runs=%s cluster=%s", len(left), cluster_id)

    return join


def parse_workers(settings: Settings) -> WorkerProcesses | None:
    """The node's parsing processes, their fork server loaded with the feed parser; None
    when configured to parse in the node's own process."""
    if settings.parse_workers == 0:
        return None
    return WorkerProcesses(settings.parse_workers, preload=["sources.rss.parse_job"])


def connect_store(store: Store) -> None:
    """Open the store's connection before the node registers, so its first crawlers' counts
    and writes do not pay for it (a Cassandra ring's hosts and statements, a second or more on
    a busy host). A store that does not answer holds the node back one connection attempt;
    its writes are retried as ever."""
    began = time.monotonic()
    if store.ping():
        log.info("store connected took=%.2fs", time.monotonic() - began)
    else:
        log.warning("store not answering at start took=%.2fs", time.monotonic() - began)


def seen_after(settings: Settings, store: Store) -> float | None:
    """How long after a subscriber attaches its seen-set is loaded and trusted: a node drops
    a crawler the hub no longer polls it for within orphan_after, and detach_after more covers
    a store write that node had begun. None, no seen-set: BLACKWIDOW_SEEN_SET=0, or a store
    whose writes read nothing a filter could save (bench/dedup.py: it only costs there)."""
    if not (settings.seen_set and store.reads_before_write):
        return None
    return settings.orphan_after + settings.detach_after
