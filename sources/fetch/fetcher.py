"""Guarded fetcher for every outgoing fetch on a node: no internal addresses, bounded size and time.

It does not parse, retry or schedule; data sources decide what to fetch and when. It speaks
urllib3 directly: requests' conveniences (cookies, environment proxies, its own redirect
handling) are not wanted here, and a 304 costs a third of the CPU without them (a node polls
hundreds of feeds a second, most of them unchanged).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urljoin

import urllib3
from requests.adapters import HTTPAdapter

from sources.fetch.errors import FetchError, HttpStatusError
from sources.fetch.guard import (
    check_url,
    normal_host,
    peer_checked_adapter,
    peer_checked_pools,
    peer_refusal,
)
from sources.observer import UNOBSERVED, SourceObserver

USER_AGENT = "blackwidow/0.1"
_CHUNK = 64 * 1024
_TIMEOUTS = (urllib3.exceptions.TimeoutError, TimeoutError)
_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, OSError)
KEPT_HOSTS = 100  # hosts whose connections are kept for the next fetch, the latest used


@dataclass(frozen=True)
class FetchResult:
    """A complete response: 200 (or another 2xx) with its decoded body, or 304 with none."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes


def _short_reason(error: BaseException) -> str:
    """The innermost useful words of a transport error, without pool and URL boilerplate."""
    inner = getattr(error.args[0], "reason", error.args[0]) if error.args else error
    text = str(inner).rsplit(": ", 1)[-1].strip()
    return f"connection failed ({text or type(error).__name__})"[:200]


def _release(response: urllib3.BaseHTTPResponse) -> None:
    """A response read to its end gives its connection back for the next fetch from that host
    (no new TCP or TLS handshake per poll); any other is closed with its connection."""
    if not response.isclosed():
        response.close()
    response.release_conn()


class GuardedFetcher:
    """GETs one URL for a data source, following redirects itself so that every hop is checked."""

    def __init__(
        self,
        allow_hosts: frozenset[str] = frozenset(),
        max_bytes: int = 5 * 1024 * 1024,
        deadline: float = 20.0,
        max_redirects: int = 5,
        connect_timeout: float = 5.0,
        per_host: int = 10,
        observer: SourceObserver = UNOBSERVED,
    ) -> None:
        self._observer = observer
        self._allow_hosts = frozenset(normal_host(h) for h in allow_hosts)
        self._max_bytes = max_bytes
        self._deadline = deadline
        self._max_redirects = max_redirects
        self._connect_timeout = connect_timeout
        # as many kept connections per host as fetches a scheduler runs there at once
        self._pools = urllib3.PoolManager(num_pools=KEPT_HOSTS, maxsize=per_host, retries=False)
        self._pools.pool_classes_by_scheme = peer_checked_pools(peer_refusal(self._allow_hosts))

    def guarded_adapter(self) -> HTTPAdapter:
        """A transport that refuses what this fetcher refuses, for a provider's own client."""
        return peer_checked_adapter(peer_refusal(self._allow_hosts))

    def get(self, url: str, headers: Mapping[str, str] | None = None) -> FetchResult:
        """Fetch `url`; raise FetchError for anything but a complete 2xx or a 304. Every
        fetch, whatever its end, is told to the observer once."""
        started = time.monotonic()
        try:
            result = self._follow(url, headers)
        except FetchError as error:
            self._observer.fetched(error.kind, time.monotonic() - started, 0)
            raise
        outcome = {200: "200", 304: "304"}.get(result.status, "2xx")
        self._observer.fetched(outcome, time.monotonic() - started, len(result.body))
        return result

    def _follow(self, url: str, headers: Mapping[str, str] | None) -> FetchResult:
        deadline_at = time.monotonic() + self._deadline
        for _hop in range(self._max_redirects + 1):
            check_url(url, self._allow_hosts)
            response = self._send(url, headers or {}, deadline_at)
            try:
                location = response.get_redirect_location()
                if location:
                    url = urljoin(url, location)
                    continue
                return self._complete(url, response, deadline_at)
            finally:
                _release(response)
        raise FetchError(
            f"too many redirects (more than {self._max_redirects})", "too_many_redirects"
        )

    def _send(
        self, url: str, headers: Mapping[str, str], deadline_at: float
    ) -> urllib3.BaseHTTPResponse:
        remaining = self._remaining(deadline_at)
        timeout = urllib3.Timeout(connect=min(self._connect_timeout, remaining), read=remaining)
        try:
            return self._pools.request(
                "GET",
                url,
                headers={"User-Agent": USER_AGENT, **headers},
                preload_content=False,
                redirect=False,
                timeout=timeout,
            )
        except urllib3.exceptions.NewConnectionError as error:  # a ConnectTimeoutError by kin
            raise FetchError(_short_reason(error)) from None
        except _TIMEOUTS:
            raise FetchError(self._too_slow(), "timeout") from None
        except _TRANSPORT_ERRORS as error:
            raise FetchError(_short_reason(error)) from None

    def _complete(
        self, url: str, response: urllib3.BaseHTTPResponse, deadline_at: float
    ) -> FetchResult:
        status = response.status
        if status == 304:
            response.read()  # no body by definition: reading it frees the connection
            return FetchResult(url, status, response.headers, b"")
        if not 200 <= status < 300:
            raise HttpStatusError(status, response.headers)
        return FetchResult(url, status, response.headers, self._read_body(response, deadline_at))

    def _read_body(self, response: urllib3.BaseHTTPResponse, deadline_at: float) -> bytes:
        """Read the decoded body, chunk by chunk, within the size cap and the deadline.

        `read1` returns whatever one socket read yields (a plain `read` would block until a
        whole chunk arrived, so a trickling server could hold it far past the deadline), and
        urllib3 bounds how much one call may decompress, so a gzip bomb never grows past the
        cap in memory.
        """
        body = bytearray()
        try:
            while True:
                self._tighten_read_timeout(response, deadline_at)
                chunk = response.read1(
                    min(_CHUNK, self._max_bytes + 1 - len(body)), decode_content=True
                )
                if not chunk:
                    return bytes(body)
                body += chunk
                if len(body) > self._max_bytes:
                    raise FetchError(f"response larger than {self._max_bytes} bytes", "too_large")
        except _TIMEOUTS:
            raise FetchError(self._too_slow(), "timeout") from None
        except urllib3.exceptions.DecodeError:
            raise FetchError("body does not match its content-encoding", "bad_encoding") from None
        except _TRANSPORT_ERRORS as error:
            raise FetchError(_short_reason(error)) from None

    def _tighten_read_timeout(self, response: urllib3.BaseHTTPResponse, deadline_at: float) -> None:
        # A socket timeout bounds one read; shrinking it keeps the sum within the deadline.
        remaining = self._remaining(deadline_at)
        sock = getattr(response.connection, "reading_socket", None)
        if sock is not None:
            sock.settimeout(remaining)

    def _remaining(self, deadline_at: float) -> float:
        remaining = deadline_at - time.monotonic()
        if remaining <= 0:
            raise FetchError(self._too_slow(), "timeout")
        return remaining

    def _too_slow(self) -> str:
        return f"no complete response within {self._deadline:g}s"
