"""Routing: which node runs a crawler, from its source key. Pure.

Crawlers that share a source key land on the same node, so they share one data source
there. Hashes are sha1-based, never Python's ``hash()``, whose value changes from one
process to the next (PYTHONHASHSEED): every hub process and every restart must route a key
the same way. Rendezvous weights mix a key's hash with a node's through a 64-bit finaliser,
so a thousand nodes times a hundred thousand keys are weighed as arrays, not one by one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np

_MASK = (1 << 64) - 1
_M1, _M2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53  # murmur3's 64-bit finaliser constants
CHUNK_KEYS = 2048  # keys weighed at once against every node: bounds the arrays' memory


def _stable_hash(text: str) -> int:
    """First 8 bytes of the sha1 of the UTF-8 text, as a big-endian unsigned int."""
    return int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest()[:8], "big")


def _node_hash(node_id: int) -> int:
    return _stable_hash(f"node/{node_id}")


def _weight(key_hash: int, node_hash: int) -> int:
    """A rendezvous weight: the two hashes mixed (murmur3's finaliser over their xor)."""
    x = key_hash ^ node_hash
    x ^= x >> 33
    x = (x * _M1) & _MASK
    x ^= x >> 33
    x = (x * _M2) & _MASK
    return x ^ (x >> 33)


def _weights(key_hashes: np.ndarray, node_hashes: np.ndarray) -> np.ndarray:
    """_weight for every key (rows) against every node (columns), in wrapping uint64."""
    x = key_hashes[:, None] ^ node_hashes[None, :]
    x ^= x >> np.uint64(33)
    x *= np.uint64(_M1)
    x ^= x >> np.uint64(33)
    x *= np.uint64(_M2)
    x ^= x >> np.uint64(33)
    return x


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
    key_hash = _stable_hash(source_key)
    return max(nodes, key=lambda node_id: (_weight(key_hash, _node_hash(node_id)), -node_id))


ROUTERS: dict[str, Callable[[str, Sequence[int]], int]] = {
    "modulo": route_modulo,
    "rendezvous": route_rendezvous,
}


def check_strategy(strategy: str) -> None:
    if strategy not in ROUTERS:
        raise ValueError(
            f"unknown routing strategy {strategy!r}; expected one of {sorted(ROUTERS)}"
        )


def assign(
    source_keys: Mapping[int, str], node_ids: Sequence[int], strategy: str
) -> dict[int, int]:
    """Crawler id -> node id for every crawler; {} when there are no nodes to run them.

    An unknown strategy is a ValueError even without nodes, so a typo in the
    settings shows up at once rather than when the first node registers.
    """
    router = Router(strategy)
    if not node_ids:
        return {}
    router.nodes = tuple(_distinct_nodes(node_ids))
    ids = list(source_keys)
    return dict(zip(ids, router.route_many([source_keys[c] for c in ids]), strict=True))


class Router:
    """Routes keys over the current live nodes, remembering key hashes between calls, and
    says which crawlers move when the node set changes."""

    def __init__(self, strategy: str) -> None:
        check_strategy(strategy)
        self.strategy = strategy
        self.nodes: tuple[int, ...] = ()  # ascending
        self._key_hashes: dict[str, int] = {}

    def _hashes(self, keys: Sequence[str]) -> np.ndarray:
        cache = self._key_hashes
        for key in keys:
            if key not in cache:
                cache[key] = _stable_hash(key)
        return np.fromiter((cache[k] for k in keys), dtype=np.uint64, count=len(keys))

    def route_many(self, keys: Sequence[str]) -> list[int]:
        """The node of each key, over `nodes` (which must not be empty)."""
        if not self.nodes:
            raise ValueError("no nodes to route to")
        if not keys:
            return []
        nodes = np.array(self.nodes, dtype=np.int64)
        hashes = self._hashes(keys)
        if self.strategy == "modulo":
            return nodes[hashes % np.uint64(len(nodes))].tolist()
        node_hashes = np.array([_node_hash(n) for n in self.nodes], dtype=np.uint64)
        chosen: list[int] = []
        for start in range(0, len(keys), CHUNK_KEYS):
            weights = _weights(hashes[start : start + CHUNK_KEYS], node_hashes)
            # argmax takes the first maximum: nodes ascend, so a tie goes to the lower id
            chosen += nodes[weights.argmax(axis=1)].tolist()
        return chosen

    def rebuild(
        self, live: Sequence[int], placement: Mapping[int, tuple[str, int]]
    ) -> dict[int, int]:
        """Take a new node set; crawler id -> new node for the placed crawlers
        (crawler id -> (key, node)) that must move. Empty `live` moves nothing: there is
        nowhere to go."""
        before = set(self.nodes)
        self.nodes = tuple(sorted(set(live)))
        if not self.nodes:
            return {}
        if self.strategy == "rendezvous" and set(self.nodes) <= before:
            # only departures: keys on nodes still live stay where they are
            candidates = [c for c, (_, node) in placement.items() if node not in self.nodes]
        else:
            candidates = list(placement)
        routed = self.route_many([placement[c][0] for c in candidates])
        return {
            c: node for c, node in zip(candidates, routed, strict=True) if node != placement[c][1]
        }
