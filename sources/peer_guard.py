"""Where a node (and the hub, calling nodes) may connect: no loopback, private, link-local or
metadata address unless the host is allowed, judged on the address each connection reached."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from sources.fetch_errors import FetchError

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
