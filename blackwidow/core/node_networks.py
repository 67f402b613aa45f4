"""Where node URLs may point: the hub polls what nodes tell it, so it must not become an SSRF path.

With ``BLACKWIDOW_NODE_NETWORKS`` set, a registration whose URL resolves outside those
networks is refused, and every hub-to-node connection is checked again at connect time (a
name may resolve elsewhere later). Hub-to-node calls never follow redirects either.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from blackwidow.core.domain_errors import Invalid

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def refusal(host: str, addresses: Iterable[str], networks: tuple[Network, ...]) -> str | None:
    """Why `host` must not be called at these addresses, or None; no networks allow all."""
    if not networks:
        return None
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if address.version == 6 and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if not any(address in network for network in networks):
            return f"{host} resolves to {address}, outside BLACKWIDOW_NODE_NETWORKS"
    return None


def check_registration(url: str, networks: tuple[Network, ...]) -> None:
    """Refuse (422 naming `url`) a node URL that resolves outside the allowed networks."""
    if not networks:
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        infos = socket.getaddrinfo(host, parts.port or 80, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Invalid(f"cannot resolve node host {host}", "url") from None
    reason = refusal(host, [str(info[4][0]) for info in infos], networks)
    if reason is not None:
        raise Invalid(reason, "url")
