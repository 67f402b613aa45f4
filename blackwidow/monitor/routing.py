"""Routing: which node runs a crawler, from its source key. Pure.

Crawlers that share a source key land on the same node, so they share one data source
there. Hashes are sha1-based, never Python's ``hash()``, whose value changes from one
process to the next (PYTHONHASHSEED): every hub process and every restart must route a key
the same way. Rendezvous weights mix a key's hash with a node's through a 64-bit finaliser,
so a thousand nodes times a hundred thousand keys are weighed as arrays, not one by one.

Weighted rendezvous scores each key on each node as capacity / -ln(u), u the rendezvous
weight mapped into (0, 1): a node's chance of the highest score is its share of the total
capacity, so a node twice as large gets about twice the keys, and a change of the node set
still moves only what must move. A node with no room left (its data sources at its
capacity) is given no new key: such a key goes to its next-best node with room, while the
keys already on the full node stay there. A placed key leaves its node only when the node
leaves or shrinks, or for a node that joins or grows and is now its best.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

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


def _log_scores(
    key_hashes: np.ndarray, node_hashes: np.ndarray, log_capacity: np.ndarray
) -> np.ndarray:
    """ln(capacity / -ln u) for every key (rows) on every node (columns); u is the rendezvous
    weight's top 53 bits, offset by half a step so it is never 0 or 1."""
    u = ((_weights(key_hashes, node_hashes) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    return log_capacity[None, :] - np.log(-np.log(u))


@dataclass(frozen=True)
class Columns:
    """The nodes as weighted routing weighs them, one entry per node in id order."""

    hashes: np.ndarray  # uint64: each node's hash
    capacity: np.ndarray  # int64: its weight
    room: np.ndarray  # int64: new keys it may still take
    draws: np.ndarray  # bool: it joined or grew, so it may draw keys from other nodes
    releases: np.ndarray  # bool: it shrank, so its keys may go to any node with room


def _best(
    key_hashes: np.ndarray, current: np.ndarray, closed: np.ndarray, nodes: Columns
) -> np.ndarray:
    """Each key's best node (a column index) among those not `closed`; -1 when every node is
    closed to it. A key on a node now (`current`, -1: none) may always stay there; it leaves
    only if its node releases it, or for a node that draws and is its best of all, so a
    joining node takes its share of keys, wherever they were."""
    log_capacity = np.log(nodes.capacity.astype(np.float64))
    chosen = np.empty(len(key_hashes), dtype=np.int64)
    for start in range(0, len(key_hashes), CHUNK_KEYS):
        scores = _log_scores(key_hashes[start : start + CHUNK_KEYS], nodes.hashes, log_capacity)
        ideal = scores.argmax(axis=1)  # the first maximum: a tie goes to the lower id
        on = current[start : start + CHUNK_KEYS]
        rows = np.flatnonzero(on >= 0)
        kept = scores[rows, on[rows]]
        scores[:, closed] = -np.inf
        scores[rows, on[rows]] = kept
        best = scores.argmax(axis=1)
        best[np.isneginf(scores[np.arange(len(best)), best])] = -1
        held = rows[~nodes.releases[on[rows]]]
        drawn = nodes.draws[ideal[held]] & ~closed[ideal[held]]
        best[held] = np.where(drawn, ideal[held], on[held])
        chosen[start : start + CHUNK_KEYS] = best
    return chosen


def place_weighted(key_hashes: np.ndarray, current: np.ndarray, nodes: Columns) -> np.ndarray:
    """Distinct keys' nodes (column indexes, -1: no node has room) by weighted rendezvous.

    A key stays allowed on its `current` node however full; a new key takes a node's room,
    the first keys first. A node whose room the keys overrun keeps the first of them and is
    closed to the rest, which take their next-best node; each round closes a node, so there
    are at most as many rounds as nodes.
    """
    room = np.maximum(nodes.room, 0)
    closed = room == 0
    chosen = _best(key_hashes, current, closed, nodes)
    while True:
        new = (chosen >= 0) & (chosen != current)
        over = np.flatnonzero(np.bincount(chosen[new], minlength=len(room)) > room)
        if not len(over):
            return chosen
        closed[over] = True
        excess = np.concatenate(
            [np.flatnonzero(new & (chosen == node))[room[node] :] for node in over]
        )
        chosen[excess] = _best(key_hashes[excess], current[excess], closed, nodes)


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


def route_weighted(
    source_key: str, node_ids: Sequence[int], capacity: Mapping[int, int] | None = None
) -> int:
    """Weighted rendezvous by capacity (1 each when not given), every node with room."""
    router = Router("weighted")
    nodes = _distinct_nodes(node_ids)
    router.rebuild(nodes, {}, capacity or dict.fromkeys(nodes, 1))
    return cast(int, router.route_many([source_key])[0])


ROUTERS: dict[str, Callable[[str, Sequence[int]], int]] = {
    "modulo": route_modulo,
    "rendezvous": route_rendezvous,
    "weighted": route_weighted,
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
    router.rebuild(_distinct_nodes(node_ids), {})  # weighted: equal capacities, room to spare
    ids = list(source_keys)
    routed = cast(list[int], router.route_many([source_keys[c] for c in ids]))
    return dict(zip(ids, routed, strict=True))


class Router:
    """Routes keys over the current live nodes, remembering key hashes between calls, and
    says which crawlers move when the node set changes.

    Weighted routing also reads each node's `capacity` (set with the node set, by
    `rebuild`) and its `room` (set before each pass: data sources it may still take; a node
    not named has room to spare)."""

    def __init__(self, strategy: str) -> None:
        check_strategy(strategy)
        self.strategy = strategy
        self.nodes: tuple[int, ...] = ()  # ascending
        self.capacity: dict[int, int] = {}
        self.room: dict[int, int] = {}
        self._key_hashes: dict[str, int] = {}

    def _hashes(self, keys: Sequence[str]) -> np.ndarray:
        cache = self._key_hashes
        for key in keys:
            if key not in cache:
                cache[key] = _stable_hash(key)
        return np.fromiter((cache[k] for k in keys), dtype=np.uint64, count=len(keys))

    def route_many(
        self, keys: Sequence[str], current: Mapping[str, int] | None = None
    ) -> list[int | None]:
        """The node of each key, over `nodes` (which must not be empty). Weighted: None for a
        key no node has room for; `current` names the node a key is on now, where it may
        stay however full (the other strategies need not know)."""
        if not self.nodes:
            raise ValueError("no nodes to route to")
        if not keys:
            return []
        if self.strategy == "weighted":
            return self._route_weighted(keys, current or {})
        nodes = np.array(self.nodes, dtype=np.int64)
        hashes = self._hashes(keys)
        if self.strategy == "modulo":
            return nodes[hashes % np.uint64(len(nodes))].tolist()
        node_hashes = np.array([_node_hash(n) for n in self.nodes], dtype=np.uint64)
        chosen: list[int | None] = []
        for start in range(0, len(keys), CHUNK_KEYS):
            weights = _weights(hashes[start : start + CHUNK_KEYS], node_hashes)
            # argmax takes the first maximum: nodes ascend, so a tie goes to the lower id
            chosen += nodes[weights.argmax(axis=1)].tolist()
        return chosen

    def _route_weighted(
        self,
        keys: Sequence[str],
        current: Mapping[str, int],
        draws: Collection[int] = (),
        releases: Collection[int] = (),
    ) -> list[int | None]:
        """Equal keys are placed once, so they land together and take a node's room once. A
        key on a live node stays there unless a node that `draws` beats it, or its node
        `releases` it (see rebuild)."""
        distinct = list(dict.fromkeys(keys))
        column = {node: i for i, node in enumerate(self.nodes)}
        spare = len(distinct)  # room enough for every key: a node not named is not full
        nodes = Columns(
            hashes=np.array([_node_hash(n) for n in self.nodes], dtype=np.uint64),
            capacity=np.array([self.capacity.get(n, 1) for n in self.nodes], dtype=np.int64),
            room=np.array([self.room.get(n, spare) for n in self.nodes], dtype=np.int64),
            draws=np.array([n in draws for n in self.nodes], dtype=bool),
            releases=np.array([n in releases for n in self.nodes], dtype=bool),
        )
        at = np.array([column.get(current.get(k, -1), -1) for k in distinct], dtype=np.int64)
        picked = place_weighted(self._hashes(distinct), at, nodes)
        chosen = [self.nodes[i] if i >= 0 else None for i in picked.tolist()]
        node_of = dict(zip(distinct, chosen, strict=True))
        return [node_of[k] for k in keys]

    def routes_over(self, live: Sequence[int], capacity: Mapping[int, int]) -> bool:
        """Whether the router routes over these nodes already (weighted: these capacities)."""
        return self.nodes == tuple(live) and self.capacity == self._weighed(live, capacity)

    def _weighed(self, nodes: Sequence[int], capacity: Mapping[int, int] | None) -> dict[int, int]:
        """Node -> capacity as routing weighs it: 1 each unless weighted (and when not said)."""
        given = (capacity or {}) if self.strategy == "weighted" else {}
        return {n: given.get(n, 1) for n in nodes}

    def rebuild(
        self,
        live: Sequence[int],
        placement: Mapping[int, tuple[str, int]],
        capacity: Mapping[int, int] | None = None,
    ) -> dict[int, int | None]:
        """Take a new node set (and, weighted, their capacities); crawler id -> new node for
        the placed crawlers (crawler id -> (key, node)) that must move, None for one no node
        has room for. Empty `live` moves nothing: there is nowhere to go."""
        before, weighed = set(self.nodes), self.capacity
        self.nodes = tuple(sorted(set(live)))
        self.capacity = self._weighed(self.nodes, capacity)
        if not self.nodes:
            return {}
        steady = all(weighed.get(n) == c for n, c in self.capacity.items())
        if self.strategy != "modulo" and set(self.nodes) <= before and steady:
            # only departures: keys on nodes still live stay where they are
            candidates = [c for c, (_, node) in placement.items() if node not in self.nodes]
        else:
            candidates = list(placement)
        keys = [placement[c][0] for c in candidates]
        if self.strategy == "weighted":
            # a key moves only off a node that left or shrank, or to one that joined or grew
            current = {placement[c][0]: placement[c][1] for c in candidates}
            draws = {n for n, c in self.capacity.items() if c > weighed.get(n, 0)}
            releases = {n for n, c in self.capacity.items() if c < weighed.get(n, c)}
            routed = self._route_weighted(keys, current, draws, releases)
        else:
            routed = self.route_many(keys)
        return {
            c: node for c, node in zip(candidates, routed, strict=True) if node != placement[c][1]
        }
