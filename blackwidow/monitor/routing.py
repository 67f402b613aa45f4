"""Routing: which node runs a crawler, from its source key. Pure.

Crawlers that share a source key land on the same node, so they share one data
source there. The hash is sha1, never Python's ``hash()``, whose value changes
from one process to the next (PYTHONHASHSEED): every hub process and every
restart must route a key the same way.
"""

import hashlib
from collections.abc import Callable, Mapping, Sequence


def _stable_hash(text: str) -> int:
    """First 8 bytes of the sha1 of the UTF-8 text, as a big-endian unsigned int."""
    return int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest()[:8], "big")


def _distinct_nodes(node_ids: Sequence[int]) -> list[int]:
    """Nodes ordered by id, so the caller's order (and any repeat) cannot change a route."""
    if not node_ids:
        raise ValueError("no nodes to route to")
    return sorted(set(node_ids))


def route_modulo(source_key: str, node_ids: Sequence[int]) -> int:
    """Hash modulo the node count: simple, but any change of the node set moves most keys."""
    nodes = _distinct_nodes(node_ids)
    return nodes[_stable_hash(source_key) % len(nodes)]


def route_rendezvous(source_key: str, node_ids: Sequence[int]) -> int:
    """Highest random weight: a change of the node set moves only the keys that must move.

    Removing a node moves only its own keys; adding one moves only keys to it.
    On a (practically impossible) tie of weights the lower node id wins.
    """
    nodes = _distinct_nodes(node_ids)
    return max(nodes, key=lambda node_id: (_stable_hash(f"{source_key}/{node_id}"), -node_id))


ROUTERS: dict[str, Callable[[str, Sequence[int]], int]] = {
    "modulo": route_modulo,
    "rendezvous": route_rendezvous,
}


def assign(
    source_keys: Mapping[int, str], node_ids: Sequence[int], strategy: str
) -> dict[int, int]:
    """Crawler id -> node id for every crawler; {} when there are no nodes to run them.

    An unknown strategy is a ValueError even without nodes, so a typo in the
    settings shows up at once rather than when the first node registers.
    """
    if strategy not in ROUTERS:
        raise ValueError(
            f"unknown routing strategy {strategy!r}; expected one of {sorted(ROUTERS)}"
        )
    if not node_ids:
        return {}
    route = ROUTERS[strategy]
    return {crawler_id: route(key, node_ids) for crawler_id, key in source_keys.items()}
