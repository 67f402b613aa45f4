"""A pushed subscriber's first store work, done off the push's request: its count, and the
items its data source already had (a crawler joining a running one). A changed spec never
waits either: Subscriber.update leaves what waits to the node's write timer.

The hub waits about a second for a push's answer and takes one that outlasts it for a push
that failed, though the node applied it; it then removes the crawler again, perhaps during
that very write, whose count it never learns. A store call inside the push (a slow store, a
first connection, a batch of crawlers joining running sources one write after another) could
outlast that wait; here they wait their turn on one thread instead (one job per subscriber
in its life), and the push's answer says what is in place now (a count not known yet is
`items_collected` None), as a poll would, and the next poll says the rest.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Joins:
    """Jobs run in turn on one daemon thread, started with the first job."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="joins", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:  # one subscriber's trouble must not stop the others' joins
                log.exception("subscriber join failed")
