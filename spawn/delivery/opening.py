"""Opens a node's delivery path from its settings: the store, the queue's outbox on the node's
spool file, the sink in front of both, and the delivery ledger; and closes them in order.

The files are named by the node's address, so a node restarted at the same host and port
finds what a killed predecessor left: entries still owed to the queue, and its runs' counts.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from blackwidow.queue import open_queue
from blackwidow.settings import Settings
from blackwidow.store import Store, StoreUnavailable, open_store
from spawn.delivery.delivery_ledger import SqliteLedger, ledger_path
from spawn.delivery.queue_outbox import Outbox
from spawn.delivery.sink import NodeSink
from spawn.delivery.spool import Spool, spool_path
from spawn.metrics import NodeMetrics

log = logging.getLogger(__name__)


@dataclass
class Delivery:
    store: Store
    outbox: Outbox | None  # None: no queue configured
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


def open_delivery(settings: Settings, host: str, port: int, metrics: NodeMetrics) -> Delivery:
    """The delivery path of the node serving at host:port, with what a predecessor's outbox
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
    return Delivery(store, outbox, sink, ledger)


def _open_outbox(settings: Settings, host: str, port: int) -> Outbox | None:
    queue = open_queue(settings.redis_url, settings.queue_maxlen)
    if queue is None:
        return None
    spool = Spool(spool_path(settings.outbox_dir, host, port, os.getpid()))
    return Outbox(queue, spool, capacity=settings.node_buffer)
