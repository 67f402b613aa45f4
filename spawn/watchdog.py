"""The node's timers: retry failed store writes, drop orphans, detach when the hub goes quiet,
offer subscribers their data source's items again when a new time segment begins."""

from __future__ import annotations

import logging
import threading

from spawn.node import NodeState

log = logging.getLogger(__name__)

TICK = 0.2  # seconds between store-write retries: they back off from a fifth of a second
CHECK_EVERY = 5  # ticks between looks at the timers, which walk every subscriber


def check(node: NodeState, orphan_after: float, detach_after: float) -> None:
    """One look at the timers (docs/architecture.md "How a crawler runs", step 7)."""
    if not node.registered.is_set():
        return
    if node.silent_for() > detach_after:
        node.detach(f"not polled for {node.silent_for():.1f}s")
        return
    for crawler_id in node.orphans(orphan_after):
        log.warning("orphan subscriber dropped crawler=%s", crawler_id)
        node.pool.delete(crawler_id)
    node.pool.recollect_due()


def run(node: NodeState, orphan_after: float, detach_after: float, stop: threading.Event) -> None:
    """The timers on this thread, the write retries on one of their own: a retry may wait
    for a store that runs the write and never answers, and must not hold up a detach."""
    retries = threading.Thread(target=_retry_writes, args=(node, stop), name="write-retries")
    retries.daemon = True
    retries.start()
    while not stop.wait(TICK * CHECK_EVERY):
        check(node, orphan_after, detach_after)


def _retry_writes(node: NodeState, stop: threading.Event) -> None:
    while not stop.wait(TICK):
        node.pool.retry_writes()
        node.probe_store()
