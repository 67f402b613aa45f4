"""Where a node (and the hub, calling nodes or webhooks) may connect: no loopback, private,
link-local or metadata address unless the host is allowed, judged on the addresses a URL's host
resolves to before a request and on the address each connection reached."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from sources.fetch.errors import FetchError

_SCHEMES = {"http": 80, "https": 443}
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


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


def refusal(host: str, addresses: Iterable[str], allow_hosts: frozenset[str]) -> str | None:
    """The reason to refuse connecting to `host` at these addresses, or None to go ahead."""
    if normal_host(host) in allow_hosts:
        return None
    for text in addresses:
        kind = _address_kind(_embedded_ipv4(ipaddress.ip_address(text.split("%", 1)[0])))
        if kind is not None:
            return f"refused address {text} ({kind}) for host {host}"
    return None


def normal_host(host: str) -> str:
    return host.lower().rstrip(".")


def check_url(url: str, allow_hosts: frozenset[str]) -> None:
    """Raise FetchError unless `url` is http(s) and its host resolves only to addresses the
    fetch rules allow (or is listed in `allow_hosts`). The fetcher runs it before every
    request and hop; the hub, before every webhook delivery and on a webhook's creation."""
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    except ValueError as error:
        raise FetchError(f"invalid URL ({error})", "invalid_url") from None
    if scheme not in _SCHEMES:
        raise FetchError(f"unsupported scheme '{scheme}'", "invalid_url")
    if not host:
        raise FetchError("no host in URL", "invalid_url")
    try:
        infos = socket.getaddrinfo(host, port or _SCHEMES[scheme], type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise FetchError(f"cannot resolve host {host}", "dns") from None
    allowed = frozenset(normal_host(h) for h in allow_hosts)
    reason = refusal(host, [str(info[4][0]) for info in infos], allowed)
    if reason is not None:
        raise FetchError(reason, "refused")


PeerRefusal = Callable[[str, str], str | None]  # (host, connected address) -> reason or None


def peer_refusal(allow_hosts: frozenset[str]) -> PeerRefusal:
    """The fetch rules as a check of the address a connection reached."""
    allowed = frozenset(normal_host(h) for h in allow_hosts)
    return lambda host, address: refusal(host, [address], allowed)


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
                    raise FetchError(reason, "refused")
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
