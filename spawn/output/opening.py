"""Opens a node's output path from its settings: at start the store and the sink in front of
it; once the node knows its cluster (its first registration's answer), the queue's outbox on
the node's spool file and the run ledger, both files of that cluster; and closes them in order.

The files are named by the node's address and cluster, so a node restarted at the same host
and port for the same cluster finds what a killed predecessor left: entries still owed to the
queue, and its runs' counts. Those at the address of another cluster are set aside first
(spawn.output.other_clusters): never replayed into this one.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from blackwidow.core.queue import open_queue
from blackwidow.core.queue.base import ItemQueue
from blackwidow.core.settings import Settings
from blackwidow.core.store import Store, StoreUnavailable, open_store
from spawn.metrics import NodeMetrics
from spawn.node import OtherCluster
from spawn.output.other_clusters import set_aside
from spawn.output.queue_outbox import QueueOutbox
from spawn.output.run_ledger import SqliteLedger, ledger_path
from spawn.output.sink import NodeSink
from spawn.output.spool import Spool, spool_path

log = logging.getLogger(__name__)

NO_OUTBOX_YET = {"pushed": 0, "pending": 0, "failed_pushes": 0, "last_error": None}


@dataclass(frozen=True)
class Place:
    """Where a node's files go and the address (or process) they are named by."""

    directory: str
    host: str
    port: int
    pid: int


@dataclass
class Output:
    store: Store
    sink: NodeSink
    queue: ItemQueue | None  # None: no queue configured
    place: Place
    capacity: int  # entries the outbox holds before the node stops taking items
    outbox: QueueOutbox | None = None  # open once the node knows its cluster (`join`)
    # likewise; never on a random port, where no successor would read it
    ledger: SqliteLedger | None = None
    cluster: str | None = None  # the cluster whose files these are, once `join` was called
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def join(self, cluster: str) -> SqliteLedger | None:
        """Open the files of the node's cluster: the outbox, what a predecessor's spool held
        handed on (or left for the first store write when the store is down), and the
        ledger, returned for the pool to write to and restore from. Called again after an
        error, it opens what it had not."""
        with self._lock:
            if self.cluster is not None and cluster != self.cluster:
                raise OtherCluster(self.cluster, cluster)  # half opened for another: keep to it
            self.cluster = cluster
            if self.queue is not None and self.outbox is None:
                self.outbox = self._open_outbox(self.queue, cluster)
            if self.place.port and self.ledger is None:
                path = ledger_path(*_named(self.place), cluster)
                set_aside(path)
                self.ledger = SqliteLedger(path)
            return self.ledger

    def outbox_stats(self) -> dict[str, Any]:
        """The outbox's figures; nothing waits in it before it is open."""
        outbox = self.outbox
        return outbox.stats() if outbox is not None else dict(NO_OUTBOX_YET)

    def close(self) -> None:
        with self._lock:
            if self.outbox is not None:
                self.outbox.stop()  # a last attempt to hand stored items to the queue
            self.store.close()
            if self.ledger is not None:
                self.ledger.close()

    def _open_outbox(self, queue: ItemQueue, cluster: str) -> QueueOutbox:
        path = spool_path(*_named(self.place), cluster)
        set_aside(path)
        outbox = QueueOutbox(queue, Spool(path), capacity=self.capacity)
        self.sink.attach(outbox)
        try:
            self.sink.replay_interrupted()
        except StoreUnavailable as error:  # the first store write tries again
            log.warning("outbox replay waits for the store error=%s", error)
        outbox.start()
        return outbox


def open_output(settings: Settings, host: str, port: int, metrics: NodeMetrics) -> Output:
    """The output path of the node serving at host:port, its files not open yet: until the
    node knows its cluster (`Output.join`) it stores nothing."""
    store = open_store(settings.store_url)
    queue = open_queue(settings.redis_url, settings.queue_maxlen)
    sink = NodeSink(store, None, metrics, outbox_due=queue is not None)
    place = Place(settings.outbox_dir, host, port, os.getpid())
    return Output(store, sink, queue, place, capacity=settings.node_buffer)


def _named(place: Place) -> tuple[str, str, int, int]:
    return place.directory, place.host, place.port, place.pid
