"""Real nodes for the model-based test of the monitor: the node app on a real data-source pool,
served by waitress on a loopback port in a thread, with the node's clock passed in.

A node can stop answering while it keeps running (a partition), answer again at the same
address (the partition heals), or stop for good (`kill -9`); a restarted node is a new
`ModelNode`, at the address of its choice.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable
from typing import Any

from blackwidow.core import serving
from blackwidow.core.store.sqlite import SqliteStore
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn import watchdog
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.renewals import Renewals
from spawn.pool.source_pool import DataSourcePool
from tests.component.conftest import SECRET
from tests.support import wait_until

LOOPBACK = frozenset({"127.0.0.1"})
FEED_INTERVAL = 60.0  # real seconds: within a history a data source fetches once, when it starts


def _bound(app: Any, port: int) -> tuple[Any, str] | None:
    try:
        return serving.bind(app, "127.0.0.1", port)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        return None


class ModelNode:
    def __init__(
        self, capacity: int, clock: Callable[[], float], store: SqliteStore, port: int = 0
    ) -> None:
        self.capacity = capacity
        fetcher = GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0)
        self.pool = DataSourcePool(
            opener(SourceContext(fetcher, FEED_INTERVAL)), store, renewals=Renewals(clock)
        )
        self.node = NodeState(self.pool, clock)
        self._app = create_node_app(self.node, SECRET)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.alive = True  # the process runs (it may still not answer: `up`)
        self.url = self._serve(port)
        self.port = int(self.url.rsplit(":", 1)[1])

    @property
    def up(self) -> bool:
        """It answers calls."""
        return self._server is not None

    def _serve(self, port: int) -> str:
        """Serve on `port` (0: a free one). A port just closed is free once the closed
        server's poll, which still holds its socket, wakes: within a second."""
        self._server, url = wait_until(
            lambda: _bound(self._app, port), timeout=5, what=f"port {port} free"
        )
        self._thread = threading.Thread(target=self._server.run, name=f"node-{url}", daemon=True)
        self._thread.start()
        return url

    def silence(self) -> None:
        """Stop answering, as behind a partition; it keeps running its subscribers."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        # waitress serves kept-alive connections after its listener closes (blackwidow.core.serving)
        for channel in list(server._map.values()):
            channel.close()
        self._thread = None  # its loop ends, and lets go of the port, at its next wake-up

    def heal(self) -> None:
        """Answer again at the same address."""
        if self.alive and not self.up:
            self._serve(self.port)

    def kill(self) -> None:
        """The process is gone: nothing answers, nothing runs."""
        self.silence()
        self.alive = False
        self.pool.clear()

    def watch(self, orphan_after: float, detach_after: float) -> None:
        """One look at the node's timers, as its watchdog thread takes them."""
        if self.alive:
            watchdog.check(self.node, orphan_after, detach_after)

    def fetched(self) -> bool:
        """Every data source of every subscriber has fetched its feeds once."""
        for status in self.pool.statuses():
            detail = self.pool.detail(status["crawler_id"])
            feeds = (detail or {}).get("feeds") or []
            if any(feed.get("last_fetch_at") is None for feed in feeds):
                return False
        return True
