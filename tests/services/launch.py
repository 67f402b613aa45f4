"""Bring up one test server in the background, or adopt one already on its port, and time how
long it takes to answer."""

from __future__ import annotations

import fcntl
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, TypeVar

from tests.services.server import Service, ServiceError, port_answers

S = TypeVar("S", bound=Service)


@contextmanager
def _start_lock(port: int) -> Iterator[None]:
    """Held from the port check until the server answers, so that two test sessions on one
    machine do not both start a server on the same port: the second finds the first's."""
    path = Path(tempfile.gettempdir()) / f"blackwidow-port-{port}.lock"
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class Launch(Generic[S]):
    """One server's start-up for a test session: begun early, waited for when a test needs it."""

    def __init__(self, service: S) -> None:
        self.service = service
        self.reused = False
        self.took: float | None = None
        self.error: Exception | None = None
        self._thread: threading.Thread | None = None
        self._launched = threading.Event()  # the process is running, or will not be started

    def begin(self) -> None:
        """Start it and wait for it in a thread, unless that was begun already."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._bring_up, name=self.service.name, daemon=True)
        self._thread.start()

    def _bring_up(self) -> None:
        began = time.monotonic()
        try:
            with _start_lock(self.service.port):
                try:
                    self.reused = port_answers(self.service.host, self.service.port)
                    if not self.reused:
                        self.service.start()
                finally:
                    self._launched.set()
                self.service.wait_ready(self.service.ready_timeout)
        except Exception as error:  # raised again by ready(), in the test that needs the server
            self.error = error
        else:
            self.took = time.monotonic() - began

    def ready(self) -> S:
        """The server, once it answers; raises what kept it from answering."""
        self.begin()
        assert self._thread is not None
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.service

    def started_here(self) -> bool:
        """Whether this session started the server, so it is ours to stop."""
        if self._thread is None:
            return False
        self._launched.wait()
        return not self.reused

    def stop(self) -> None:
        """Stop the server if this session started it, even one still starting up."""
        if self.started_here():
            self.service.stop()

    def describe(self) -> str:
        if isinstance(self.error, ServiceError):
            return f"{self.service.name} failed ({self.error.reason})"
        if self.error is not None:
            return f"{self.service.name} failed ({self.error!r})"
        if self.took is None:
            return f"{self.service.name} was still starting"
        how = "reused" if self.reused else "started"
        return f"{self.service.name} ready in {self.took:.1f} s ({how})"
