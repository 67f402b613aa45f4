"""When to reconnect a provider's stream after it failed: the policy X documents for its streams.

Network trouble: reconnect at once, then back off linearly by 250 ms up to 16 s. An HTTP
error: 5 s, doubling up to 320 s. A rate limit (420/429): the provider's own `Retry-After`
when it gives one, else `rate_limit_wait` (X says a minute), doubling up to 16 times that.
"""

from __future__ import annotations

from sources.backoff import doubling_delay

NETWORK_STEP = 0.25
NETWORK_MAX = 16.0
HTTP_FIRST = 5.0
HTTP_MAX = 320.0
RATE_LIMIT_STATUSES = (420, 429)


class ReconnectPolicy:
    def __init__(self, rate_limit_wait: float) -> None:
        self._rate_limit_wait = rate_limit_wait
        self._network_failures = 0
        self._http_failures = 0
        self._rate_limits = 0

    def connected(self) -> None:
        """A connection worked: the next failure starts the backoff afresh."""
        self._network_failures = self._http_failures = self._rate_limits = 0

    def after_network_error(self) -> float:
        wait = min(NETWORK_MAX, NETWORK_STEP * self._network_failures)
        self._network_failures += 1
        return wait

    def after_http_error(self, status: int, retry_after: float | None = None) -> float:
        if status in RATE_LIMIT_STATUSES:
            self._rate_limits += 1
            if retry_after is not None and retry_after >= 0:
                return retry_after
            first = self._rate_limit_wait
            return doubling_delay(self._rate_limits, first=first, cap=16 * first)
        self._http_failures += 1
        return doubling_delay(self._http_failures, first=HTTP_FIRST, cap=HTTP_MAX)


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
