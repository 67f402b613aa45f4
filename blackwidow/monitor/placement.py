"""Where routing placed a shard's runnable crawlers, with each node's distinct source keys
counted as placements change, and why those on no node wait. Decides nothing: it keeps what
blackwidow.monitor.placement_rules decides.

The counts are what weighted routing needs at no per-cycle cost: which node a key's crawlers
are on already (a new crawler of that key joins them there, however full it is) and how many
data sources this shard has placed on a node, which the node's last poll may not show yet.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from blackwidow.monitor.placement_rules import Wait, looks_again


class Placement:
    def __init__(self) -> None:
        self._node: dict[int, tuple[int, str]] = {}  # crawler -> (node, its source key)
        self._by_key: dict[str, dict[int, int]] = {}  # key -> node -> its crawlers there
        self._keys: dict[int, int] = {}  # node -> distinct keys placed on it
        # crawler on no node -> why: never dropped, it is looked at again (waiting_again)
        self._waiting: dict[int, Wait] = {}

    def __contains__(self, crawler_id: object) -> bool:
        return crawler_id in self._node

    def __iter__(self) -> Iterator[int]:
        return iter(self._node)

    def __len__(self) -> int:
        return len(self._node)

    def get(self, crawler_id: int) -> int | None:
        placed = self._node.get(crawler_id)
        return placed[0] if placed else None

    def items(self) -> Iterator[tuple[int, tuple[str, int]]]:
        """(crawler id, (source key, node)), as routing's rebuild takes them."""
        return ((c, (key, node)) for c, (node, key) in self._node.items())

    def put(self, crawler_id: int, key: str, node_id: int) -> None:
        self.pop(crawler_id)
        self._waiting.pop(crawler_id, None)
        self._node[crawler_id] = (node_id, key)
        nodes = self._by_key.setdefault(key, {})
        if node_id not in nodes:
            self._keys[node_id] = self._keys.get(node_id, 0) + 1
        nodes[node_id] = nodes.get(node_id, 0) + 1

    def pop(self, crawler_id: int) -> None:
        placed = self._node.pop(crawler_id, None)
        if placed is None:
            return
        node_id, key = placed
        nodes = self._by_key[key]
        nodes[node_id] -= 1
        if nodes[node_id]:
            return
        del nodes[node_id]
        if not nodes:
            del self._by_key[key]
        self._keys[node_id] -= 1
        if not self._keys[node_id]:
            del self._keys[node_id]

    def clear(self) -> None:
        """Forget every placement (every crawler is routed afresh); the waiting stay."""
        self._node.clear()
        self._by_key.clear()
        self._keys.clear()

    def set_aside(self, crawler_id: int, wait: Wait | None) -> None:
        """Place a crawler on no node: remembered with why while it waits, forgotten (None)
        when it is not to run at all."""
        self.pop(crawler_id)
        if wait is None:
            self._waiting.pop(crawler_id, None)
        else:
            self._waiting[crawler_id] = wait

    def waiting_again(self, takes: bool) -> set[int]:
        """The waiting crawlers placement_rules.looks_again names, waiting no more here: the
        pass looks at them again (`takes`: some node can take one)."""
        again = {c for c, wait in self._waiting.items() if looks_again(wait, takes)}
        for crawler_id in again:
            del self._waiting[crawler_id]
        return again

    def node_of_key(self, key: str) -> int | None:
        """A node the key's crawlers are placed on (the lowest id, in the moment a key moves)."""
        nodes = self._by_key.get(key)
        return min(nodes) if nodes else None

    def keys_on(self, node_id: int) -> int:
        """Distinct source keys placed on a node: the data sources it will run for them."""
        return self._keys.get(node_id, 0)

    def room(self, capacity: Mapping[int, int], reported: Mapping[int, int]) -> dict[int, int]:
        """Node -> the data sources it may still take: its capacity less the larger of what
        it last reported (other shards' keys too) and what this shard placed on it (pushes
        a poll may not show yet). Negative when over."""
        return {n: c - max(reported.get(n, 0), self.keys_on(n)) for n, c in capacity.items()}

    def running_on(
        self,
        crawlers: Iterable[tuple[int, str]],
        reported: Callable[[int], Collection[int]],
        live: Collection[int],
    ) -> dict[str, int]:
        """Key -> the live node it is on now, for unplaced (crawler id, key) pairs, so weighted
        routing leaves it there however full: where the key's crawlers are placed, else a
        node `reported` running the crawler (a leader that just began, or every crawler read
        afresh)."""
        on: dict[str, int] = {}
        for crawler_id, key in crawlers:
            if key in on:
                continue
            node_id = self.node_of_key(key)
            if node_id is None:
                node_id = next((n for n in sorted(reported(crawler_id)) if n in live), None)
            if node_id is not None:
                on[key] = node_id
        return on
