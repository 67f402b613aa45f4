"""A data source that does its work on one thread of its own, for sources whose subscribers
all want the very same thing (a search, a paid query): nothing to do per subscriber."""

from __future__ import annotations

import threading

from sources.model import SourceSink, SubscriberSpec

STOP_WAIT = 5.0  # stop() waits this long; a request in flight ends on its own timeout


class ThreadedSource:
    thread_name = "source"

    def __init__(self, key: str) -> None:
        self.key = key
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, spec: SubscriberSpec) -> None:
        """Nothing to do: every subscriber asked for what the source already fetches."""

    def detach(self, crawler_id: int) -> None:
        """Nothing to do: what the source fetches is the same for the others."""

    def start(self, sink: SourceSink) -> None:
        self._thread = threading.Thread(
            target=self._run, args=(sink,), name=f"{self.thread_name}-{self.key}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._interrupt()
        if self._thread is not None:
            self._thread.join(timeout=STOP_WAIT)

    def _interrupt(self) -> None:
        """Wake the thread from a wait on the network, where a source can (see stop)."""

    def _run(self, sink: SourceSink) -> None:
        raise NotImplementedError
