"""When to reconnect a provider's stream after it failed: the policy X documents for its streams.

Network trouble: reconnect at once, then back off linearly by 250 ms up to 16 s. An HTTP
error: 5 s, doubling up to 320 s. A rate limit (420/429): the provider's own `Retry-After`
when it gives one, else `rate_limit_wait` (X says a minute), doubling up to 16 times that.

X also answers 429 when the app's one connection is taken (TooManyConnections), and it may go
on counting a connection whose client vanished (a node that died). X does not say for how
long; its streams send a keep-alive every 20 s and call 20 s of silence a dead connection, so
we take about that. The refusal is retried every few seconds, jittered, for RELEASE_WINDOW
after the first one, and only then waits like a rate limit: a node taking over a dead node's
credential connects as soon as X lets go, and a connection truly held elsewhere is not
knocked on for ever (connection attempts count against X's rate limit too).
"""

from __future__ import annotations

from sources.backoff import Backoff
from sources.observer import UNOBSERVED, SourceObserver

NETWORK = Backoff(first=0.25, cap=16.0, linear=True)  # 250 ms more a loss, up to 16 s
HTTP = Backoff(first=5.0, cap=320.0)
RATE_LIMIT_STATUSES = (420, 429)
RELEASE_WINDOW = 20.0  # seconds: X's keep-alive timeout, how long it may count a lost connection
RELEASE_RETRY = 2.0  # seconds between tries inside the window,
RELEASE_JITTER = 1.0  # plus up to this, at random, so nodes do not knock in step


class ReconnectPolicy:
    """Waits between connection attempts; a stream's policy also tells the observer of each
    connection and each loss (`source` names the stream's source type)."""

    def __init__(
        self,
        rate_limit_wait: float,
        observer: SourceObserver = UNOBSERVED,
        source: str = "",
    ) -> None:
        self._observer = observer
        self._source = source
        self._rate_limit = Backoff(first=rate_limit_wait, cap=16 * rate_limit_wait)
        self._network_failures = 0
        self._http_failures = 0
        self._rate_limits = 0
        self._too_many_since: float | None = None

    def connected(self) -> None:
        """A connection worked: the next failure starts the backoff afresh."""
        self._network_failures = self._http_failures = self._rate_limits = 0
        self._too_many_since = None
        self._observer.stream_connected(self._source)

    def after_network_error(self) -> float:
        self._observer.stream_lost(self._source)
        wait = NETWORK.delay(self._network_failures)  # none after the first loss
        self._network_failures += 1
        return wait

    def after_http_error(self, status: int, retry_after: float | None = None) -> float:
        self._observer.stream_lost(self._source)
        return self._http_wait(status, retry_after)

    def _http_wait(self, status: int, retry_after: float | None = None) -> float:
        if status in RATE_LIMIT_STATUSES:
            self._rate_limits += 1
            if retry_after is not None and retry_after >= 0:
                return retry_after
            return self._rate_limit.delay(self._rate_limits)
        self._http_failures += 1
        return HTTP.delay(self._http_failures)

    def after_too_many_connections(self, now: float, jitter: float) -> float:
        """The app's one connection is taken (X's TooManyConnections): likely our own lost one,
        still counted, so try again soon until RELEASE_WINDOW has passed since the first such
        refusal, then wait as for a rate limit. `now` in monotonic seconds; `jitter` in [0, 1)."""
        self._observer.stream_lost(self._source)
        if self._too_many_since is None:
            self._too_many_since = now
        if now - self._too_many_since < RELEASE_WINDOW:
            return round(RELEASE_RETRY + RELEASE_JITTER * jitter, 1)
        return self._http_wait(429)


def describe_http_error(provider: str, status: int, wait: float) -> str:
    """The crawler-facing words for a refused connection: rate limit, credential, or else."""
    if status in RATE_LIMIT_STATUSES:
        what = f"rate limited by {provider} (HTTP {status})"
    elif status in (401, 403):
        what = f"{provider} refused the credential (HTTP {status})"
    else:
        what = f"{provider} answered HTTP {status}"
    return f"{what}; retrying in {wait:g}s"


def short_error(error: BaseException) -> str:
    """One line about a failed API call, never more than the provider said (no headers)."""
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
