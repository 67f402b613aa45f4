"""Helpers every test tier shares: waiting on a condition with a deadline, a clock to set, and
reading a paged list whole."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from sources.model import Item


class FakeClock:
    """A clock the test moves by hand: `clock.now += 5`."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def wait_until(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll `condition` until it returns something truthy, and return that; fail at the deadline
    instead of sleeping and hoping."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def next_page(link: str | None) -> str | None:
    """The URL of a `Link: <URL>; rel="next"` header, or None when it names no next page."""
    found = re.search(r'<([^>]*)>\s*;\s*rel="next"', link or "")
    return found.group(1) if found else None


def every_page(get: Callable[[str], Any], url: str) -> list[Any]:
    """Every row of a paged list, following its `Link: rel="next"` headers to the last page.
    `get` answers a URL with a Flask test response or a requests one."""
    rows: list[Any] = []
    at: str | None = url
    for _ in range(10_000):  # a list that never ends fails rather than hangs
        if at is None:
            return rows
        response = get(at)
        assert response.status_code == 200, (at, response.status_code)
        rows += response.json() if callable(response.json) else response.json
        at = next_page(response.headers.get("Link"))
    raise AssertionError(f"{url}: still a next page after 10,000")


class SinkRecorder:
    """A data source's sink that keeps what the source delivers and reports, in order."""

    def __init__(self) -> None:
        self.batches: list[list[Item]] = []
        self.targets: list[Collection[int] | None] = []  # whom each batch was for
        self.errors: list[str | None] = []
        self.error_targets: list[Collection[int] | None] = []
        self.failing: list[bool] = []
        self.delivered = threading.Event()

    def deliver(self, items: Sequence[Item], to: Collection[int] | None = None) -> None:
        self.batches.append(list(items))
        self.targets.append(to)
        self.delivered.set()

    def report_error(
        self, message: str | None, to: Collection[int] | None = None, failing: bool = False
    ) -> None:
        self.errors.append(message)
        self.error_targets.append(to)
        self.failing.append(failing)


@contextmanager
def served(app: Any, name: str, port: int = 0) -> Iterator[str]:
    """An app served by waitress on a loopback port (any free one unless given), in a thread
    of this process: its URL."""
    from blackwidow.core import serving

    server: Any
    server, url = serving.bind(app, "127.0.0.1", port)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        # waitress serves open keep-alive connections after its listener closes: its loop
        # thread closes them all, itself included, so that it ends now rather than later
        with suppress(OSError):  # its trigger closed: the loop has ended already
            server.trigger.pull_trigger(lambda: [c.close() for c in list(server._map.values())])
        thread.join(timeout=5)
