"""Opens a node's output path from its settings: the store, the queue's outbox on the node's
spool file, the sink in front of both, and the run ledger; and closes them in order.

The files are named by the node's address, so a node restarted at the same host and port
finds what a killed predecessor left: entries still owed to the queue, and its runs' counts.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from blackwidow.core.queue import open_queue
from blackwidow.core.settings import Settings
from blackwidow.core.store import Store, StoreUnavailable, open_store
from spawn.metrics import NodeMetrics
from spawn.output.queue_outbox import QueueOutbox
from spawn.output.run_ledger import SqliteLedger, ledger_path
from spawn.output.sink import NodeSink
from spawn.output.spool import Spool, spool_path

log = logging.getLogger(__name__)


@dataclass
class Output:
    store: Store
    outbox: QueueOutbox | None  # None: no queue configured
    sink: NodeSink
    ledger: SqliteLedger | None  # None on a random port, where no successor would read it

    def start(self) -> None:
        if self.outbox is not None:
            self.outbox.start()

    def close(self) -> None:
        if self.outbox is not None:
            self.outbox.stop()  # a last attempt to hand stored items to the queue
        self.store.close()
        if self.ledger is not None:
            self.ledger.close()


def open_output(settings: Settings, host: str, port: int, metrics: NodeMetrics) -> Output:
    """The output path of the node serving at host:port, with what a predecessor's outbox
    held already handed on (or left for the first store write when the store is down)."""
    store = open_store(settings.store_url)
    outbox = _open_outbox(settings, host, port)
    sink = NodeSink(store, outbox, metrics)
    try:
        sink.replay_interrupted()
    except StoreUnavailable as error:  # the first store write tries again
        log.warning("outbox replay waits for the store error=%s", error)
    ledger = None
    if port:
        ledger = SqliteLedger(ledger_path(settings.outbox_dir, host, port, os.getpid()))
    return Output(store, outbox, sink, ledger)


def _open_outbox(settings: Settings, host: str, port: int) -> QueueOutbox | None:
    queue = open_queue(settings.redis_url, settings.queue_maxlen)
    if queue is None:
        return None
    spool = Spool(spool_path(settings.outbox_dir, host, port, os.getpid()))
    return QueueOutbox(queue, spool, capacity=settings.node_buffer)
