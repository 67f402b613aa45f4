"""What a monitor shard's leader holds between cycles, shared by its poll and reconcile
threads: the shard's crawlers, what the nodes reported, the live nodes, and which crawlers
need another look (`dirty`). One lock guards it all; no I/O happens while it is held.
"""

from __future__ import annotations

import threading

from blackwidow.core.node_protocol import Cursor, Renewal
from blackwidow.monitor.memory.crawlers import Tracked
from blackwidow.monitor.memory.nodes import ReportedNodes
from blackwidow.monitor.memory.window_timers import WindowTimers
from blackwidow.node_client import NodeTarget


class ShardMemory:
    def __init__(self, lease_after: float = 0.0) -> None:
        self.lock = threading.Lock()
        # a node's leases lapse this long after the answer a poll renews them from (0: polls
        # renew nothing, for a memory that never polls)
        self.lease_after = lease_after
        self.crawlers: dict[int, Tracked] = {}
        self.reported = ReportedNodes()
        self.live: tuple[int, ...] = ()  # live node ids, ascending
        self.capacity: dict[int, int] = {}  # live node id -> the capacity it registered with
        self.data_sources: dict[int, int] = {}  # node id -> all its data sources, last reported
        self.dirty: set[int] = set()
        self.limits: dict[int, int] = {}  # user id -> item limit, for users with one
        self.loaded = False  # the crawlers have been read since this leadership began
        self.polled = threading.Event()  # set by each poll: the reconciler may run
        self.targets: dict[int, NodeTarget] = {}  # the nodes as the latest poll addressed them
        self.poll_seconds = 0.0  # how long the latest poll took
        self.windows = WindowTimers()  # when windowed crawlers' windows open or close

    def since_of(self, node_id: int) -> tuple[Cursor | None, Renewal | None]:
        """What the next poll of a node carries: the cursor of its last answer applied, and
        that answer's renewal token, which keeps its leases in force from then."""
        with self.lock:
            token = self.reported.renewal(node_id)
            renewal = Renewal(token, self.lease_after) if token and self.lease_after else None
            return self.reported.cursor(node_id), renewal
