"""A dependency's outage as two log lines: a warning when it begins, and a line when it ends
saying how long it lasted, however many attempts failed in between (an expected outage is
not a traceback per retry). Hub and node alike: the database, the item store, the queue, a
node that does not answer.

Whoever tries the dependency says how each attempt went (`failed`, `answered`); what counts
as an expected outage rather than a bug is theirs to decide. Time comes from the clock
passed in (monotonic seconds), so a test steps through an outage without sleeping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

MAX_ERROR_CHARS = 200  # of the error's first line, in the warning


def describe(error: BaseException | str) -> str:
    """One short line for an error: the driver's own error when a wrapper carries one (as
    SQLAlchemy's do), its type and the first line of its message."""
    if isinstance(error, str):
        return error[:MAX_ERROR_CHARS]
    cause = getattr(error, "orig", None) or error
    first = next(iter(str(cause).strip().splitlines()), "")
    text = f"{type(cause).__name__}: {first}" if first else type(cause).__name__
    return text[:MAX_ERROR_CHARS]


class Outage:
    """One dependency as one part of a process sees it. The first failed attempt after an
    answer logs `<what> <lost> <ids> error=...` (a warning); the first answer after failures
    logs `<what> <back> <ids> after=<s>s failures=<n>`. Safe to share between threads; an
    answer while nothing failed costs one attribute read."""

    def __init__(
        self,
        log: logging.Logger,
        what: str,
        *,
        lost: str = "down",
        back: str = "back",
        clock: Callable[[], float] = time.monotonic,
        **ids: object,
    ) -> None:
        self._log = log
        self._lost = f"{what} {lost}"
        self._back = f"{what} {back}"
        self._ids = "".join(f" {key}={value}" for key, value in ids.items())
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None  # when the first failed attempt of this outage came
        self._failures = 0

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, error: BaseException | str) -> bool:
        """An attempt failed; True (and the one warning) when it began the outage."""
        with self._lock:
            self._failures += 1
            if self._since is not None:
                return False
            self._since = self._clock()
        self._log.warning("%s%s error=%s", self._lost, self._ids, describe(error))
        return True

    def answered(self) -> float | None:
        """An attempt succeeded; the outage's length in seconds (and its one line) when this
        ended one, else None."""
        if self._since is None:
            return None
        with self._lock:
            if self._since is None:
                return None
            lasted, failures = self._clock() - self._since, self._failures
            self._since, self._failures = None, 0
        self._log.info("%s%s after=%.1fs failures=%s", self._back, self._ids, lasted, failures)
        return lasted
