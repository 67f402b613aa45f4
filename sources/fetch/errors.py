"""The errors of a guarded fetch: a short reason for a crawler's last error, and its kind."""

from __future__ import annotations

from collections.abc import Mapping


class FetchError(Exception):
    """A fetch that was refused or failed; str() is a short reason, fit for a last error, and
    `kind` one of sources.observer.FETCH_OUTCOMES, for the node's figures."""

    def __init__(self, message: str, kind: str = "connection") -> None:
        super().__init__(message)
        self.kind = kind


class HttpStatusError(FetchError):
    """A server's answer that was not 2xx, 304 or a redirect; its status and headers say how
    long to stay away (Retry-After on 429 and 503)."""

    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        kind = {4: "http_4xx", 5: "http_5xx"}.get(status // 100, "http_other")
        super().__init__(f"HTTP {status}", kind)
        self.status = status
        self.headers = headers
