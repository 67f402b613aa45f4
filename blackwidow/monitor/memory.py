"""What a monitor shard's leader holds between cycles, shared by its poll and reconcile
threads: the shard's crawlers, what the nodes reported, the live nodes, and which crawlers
need another look (`dirty`). One lock guards it all; no I/O happens while it is held.
"""

from __future__ import annotations

import threading

from blackwidow.monitor.node_client import NodeTarget
from blackwidow.monitor.tracked import Tracked
from blackwidow.monitor.view import ClusterView
from blackwidow.node_protocol import Cursor


class ShardMemory:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.crawlers: dict[int, Tracked] = {}
        self.view = ClusterView()
        self.live: tuple[int, ...] = ()  # live node ids, ascending
        self.dirty: set[int] = set()
        self.limits: dict[int, int] = {}  # user id -> item limit, for users with one
        self.loaded = False  # the crawlers have been read since this leadership began
        self.polled = threading.Event()  # set by each poll: the reconciler may run
        self.targets: dict[int, NodeTarget] = {}  # the nodes as the latest poll addressed them
        self.poll_seconds = 0.0  # how long the latest poll took

    def cursor_of(self, node_id: int) -> Cursor | None:
        with self.lock:
            return self.view.cursor(node_id)
