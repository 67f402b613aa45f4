"""Guarded fetcher for every outgoing fetch on a node: no internal addresses, bounded size and time.

It does not parse, retry or schedule; data sources decide what to fetch and when. It speaks
urllib3 directly: requests' conveniences (cookies, environment proxies, its own redirect
handling) are not wanted here, and a 304 costs a third of the CPU without them (a node polls
hundreds of feeds a second, most of them unchanged).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

USER_AGENT = "blackwidow/0.1"
_SCHEMES = {"http": 80, "https": 443}
_CHUNK = 64 * 1024
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_TIMEOUTS = (urllib3.exceptions.TimeoutError, TimeoutError)
_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, OSError)
KEPT_HOSTS = 100  # hosts whose connections are kept for the next fetch, the latest used

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchError(Exception):
    """A fetch that was refused or failed; str() is a short reason, fit for a last error."""


class HttpStatusError(FetchError):
    """A server's answer that was not 2xx, 304 or a redirect; its status and headers say how
    long to stay away (Retry-After on 429 and 503)."""

    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers


@dataclass(frozen=True)
class FetchResult:
    """A complete response: 200 (or another 2xx) with its decoded body, or 304 with none."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes


def _embedded_ipv4(address: Address) -> Address:
    # IPv6 forms that carry an IPv4 destination must be judged by that destination.
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def _address_kind(address: Address) -> str | None:
    """Why an address must not be fetched from, or None when it is globally routable."""
    checks = [
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared", address in _CGNAT),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("not global", not address.is_global),
    ]
    return next((kind for kind, hit in checks if hit), None)


def _refusal(host: str, addresses: Iterable[str], allow_hosts: frozenset[str]) -> str | None:
    """The reason to refuse connecting to `host` at these addresses, or None to go ahead."""
    if _normal_host(host) in allow_hosts:
        return None
    for text in addresses:
        kind = _address_kind(_embedded_ipv4(ipaddress.ip_address(text.split("%", 1)[0])))
        if kind is not None:
            return f"refused address {text} ({kind}) for host {host}"
    return None


def _normal_host(host: str) -> str:
    return host.lower().rstrip(".")


PeerRefusal = Callable[[str, str], str | None]  # (host, connected address) -> reason or None


def peer_checked_pools(refusal: PeerRefusal) -> dict[str, type[HTTPConnectionPool]]:
    """urllib3 connection pools, by scheme, that check the address each connection really
    reached, before any byte.

    A pre-flight DNS check alone can be raced by a name that resolves differently a moment
    later (DNS rebinding); checking the connected peer closes that gap. A refused peer
    raises FetchError. Also used by the hub for its calls to nodes.
    """

    def guarded(base: type[HTTPConnection]) -> type[HTTPConnection]:
        class Guarded(base):
            # The socket the response is read from (TLS-wrapped for https). http.client drops
            # its own reference on "Connection: close", and the fetcher still needs it to
            # shrink the read timeout as the deadline nears.
            reading_socket: socket.socket | None = None

            def _new_conn(self) -> socket.socket:
                sock = super()._new_conn()
                reason = refusal(self.host, sock.getpeername()[0])
                if reason is not None:
                    sock.close()
                    raise FetchError(reason)
                return sock

            def connect(self) -> None:
                super().connect()
                self.reading_socket = self.sock

        return Guarded

    return {
        "http": type(
            "GuardedPool", (HTTPConnectionPool,), {"ConnectionCls": guarded(HTTPConnection)}
        ),
        "https": type(
            "GuardedTLSPool", (HTTPSConnectionPool,), {"ConnectionCls": guarded(HTTPSConnection)}
        ),
    }


def peer_checked_adapter(refusal: PeerRefusal, per_host: int = 10) -> HTTPAdapter:
    """A requests transport over peer_checked_pools, for the fetcher and provider clients;
    it keeps up to `per_host` connections to each host for reuse."""
    pools = peer_checked_pools(refusal)

    class GuardedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pools

    return GuardedAdapter(pool_maxsize=per_host, max_retries=0)


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
    ) -> None:
        self._allow_hosts = frozenset(_normal_host(h) for h in allow_hosts)
        self._max_bytes = max_bytes
        self._deadline = deadline
        self._max_redirects = max_redirects
        self._connect_timeout = connect_timeout
        # as many kept connections per host as fetches a scheduler runs there at once
        self._pools = urllib3.PoolManager(num_pools=KEPT_HOSTS, maxsize=per_host, retries=False)
        self._pools.pool_classes_by_scheme = peer_checked_pools(self._refusal)

    def guarded_adapter(self) -> HTTPAdapter:
        """A transport that refuses what this fetcher refuses, for a provider's own client."""
        return peer_checked_adapter(self._refusal)

    def _refusal(self, host: str, address: str) -> str | None:
        return _refusal(host, [address], self._allow_hosts)

    def get(self, url: str, headers: Mapping[str, str] | None = None) -> FetchResult:
        """Fetch `url`; raise FetchError for anything but a complete 2xx or a 304."""
        deadline_at = time.monotonic() + self._deadline
        for _hop in range(self._max_redirects + 1):
            self._check_target(url)
            response = self._send(url, headers or {}, deadline_at)
            try:
                location = response.get_redirect_location()
                if location:
                    url = urljoin(url, location)
                    continue
                return self._complete(url, response, deadline_at)
            finally:
                _release(response)
        raise FetchError(f"too many redirects (more than {self._max_redirects})")

    def _check_target(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        except ValueError as error:
            raise FetchError(f"invalid URL ({error})") from None
        if scheme not in _SCHEMES:
            raise FetchError(f"unsupported scheme '{scheme}'")
        if not host:
            raise FetchError("no host in URL")
        try:
            infos = socket.getaddrinfo(host, port or _SCHEMES[scheme], type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise FetchError(f"cannot resolve host {host}") from None
        reason = _refusal(host, [str(info[4][0]) for info in infos], self._allow_hosts)
        if reason is not None:
            raise FetchError(reason)

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
            raise FetchError(self._too_slow()) from None
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
                    raise FetchError(f"response larger than {self._max_bytes} bytes")
        except _TIMEOUTS:
            raise FetchError(self._too_slow()) from None
        except urllib3.exceptions.DecodeError:
            raise FetchError("body does not match its content-encoding") from None
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
            raise FetchError(self._too_slow())
        return remaining

    def _too_slow(self) -> str:
        return f"no complete response within {self._deadline:g}s"
