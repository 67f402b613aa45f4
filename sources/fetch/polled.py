"""What a polled data source keeps of one fetched resource between polls, and when it is next due.

A feed (sources.rss) or the first page of a paged listing (sources.paged) is one entry of the
node's fetch scheduler. Its state here is what every such entry needs: the validators for a
conditional GET, the last answer and success, the error streak, and the due time computed
from them with sources.fetch.due. No I/O: the data sources fetch and call these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sources.fetch import due
from sources.fetch.errors import HttpStatusError
from sources.model import utc_text

_ASKS_TO_WAIT = (429, 503)  # statuses whose Retry-After is honoured


@dataclass(eq=False)  # compared by identity: each one is its own schedule entry
class PollState:
    """One polled resource: its last fetch, its validators, its error streak, its due time."""

    url: str
    next_poll_at: float = float("-inf")
    polled_on: float | None = None  # when its last poll ended, on the source's clock
    failures: int = 0  # the error streak
    error: str | None = None
    asked: float | None = None  # seconds the server asked to wait (Retry-After) on the last failure
    fetched_at: datetime | None = None  # when it was last fetched (or tried)
    status: int | None = None  # the last HTTP status; None when no answer came
    succeeded_at: datetime | None = None
    etag: str | None = None
    last_modified: str | None = None
    lifetime: float | None = None  # the server's max-age or Expires on its last answer

    def health(self, now: float, now_at: datetime) -> dict[str, Any]:
        """What an analyst sees of it; `now` on the source's clock, `now_at` in UTC."""
        due_in = max(0.0, self.next_poll_at - now)  # -inf: never fetched yet, due now
        return {
            "url": self.url,
            "last_fetch_at": self.fetched_at and utc_text(self.fetched_at),
            "last_status": self.status,
            "last_success_at": self.succeeded_at and utc_text(self.succeeded_at),
            "error": self.error,
            "error_streak": self.failures,
            "next_due_at": utc_text(now_at + timedelta(seconds=due_in)),
        }

    def conditional_headers(self) -> dict[str, str]:
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers

    def began(self) -> None:
        """A fetch starts: what the last one answered no longer holds."""
        self.fetched_at, self.status = datetime.now(UTC), None

    def answered(self, status: int, headers: Mapping[str, str], at: datetime) -> None:
        self.status = status
        self.lifetime = due.lifetime(headers, at)

    def keep_validators(self, headers: Mapping[str, str]) -> None:
        """Only once what the answer held is delivered: a 304 must never hide items that a
        failed delivery did not pass on."""
        self.etag = headers.get("ETag")
        self.last_modified = headers.get("Last-Modified")

    def succeeded(self) -> None:
        self.failures, self.error, self.asked = 0, None, None
        self.succeeded_at = self.fetched_at

    def failed(self, reason: str, error: Exception | None = None) -> None:
        """A failed poll; an HTTP status that asks to wait (429, 503) is honoured."""
        self.failures += 1
        self.error = reason
        self.asked = None
        if isinstance(error, HttpStatusError):
            self.status = error.status
            if error.status in _ASKS_TO_WAIT:
                self.asked = due.retry_after(error.headers, datetime.now(UTC))

    def plan(self, now: float, wait: float, interval: float, *lifetimes: float | None) -> float:
        """Set when it is next due after a poll that ended at `now`: `wait` on (the next tick
        of its schedules, sources.fetch.scheduled_entries), or later if the server (or the document,
        `lifetimes`) says its content lasts longer. While failing, a backoff from the shorter
        of `wait` and the node's `interval`: a failed daily poll is retried within the day."""
        self.polled_on = now
        if self.failures:
            wait = min(wait, interval)
            self.next_poll_at = due.after_failure(now, wait, self.failures, self.asked)
        else:
            self.next_poll_at = due.after_success(now, wait, self.lifetime, *lifetimes)
        return self.next_poll_at

    def replan(
        self, wait: Callable[[float], float], interval: float, *lifetimes: float | None
    ) -> float | None:
        """Its subscribers' schedules changed (`wait`: from a poll to the next tick, as they
        are now): when it is due instead, from its last poll. None when it was never polled,
        or is failing (its backoff stands)."""
        if self.polled_on is None or self.failures:
            return None
        return self.plan(self.polled_on, wait(self.polled_on), interval, *lifetimes)
