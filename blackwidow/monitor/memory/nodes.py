"""What the nodes last reported, kept between polls: each node's cursor, lease renewal token
and last answer's time, and the digest of every subscriber it runs. Applies poll answers
(full or changes only); decides nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from blackwidow.core.node_protocol import Cursor
from blackwidow.monitor.poller import NodeReport


@dataclass
class ReportedNode:
    cursor: Cursor | None = None
    digests: dict[int, str] = field(default_factory=dict)  # crawler id -> spec digest
    answered: bool = False  # the latest poll got an answer: its digests are current
    renewal: str | None = None  # the token of its latest answer, for the next poll to echo
    answered_at: float | None = None  # when its latest answer came (the hub's clock)


class ReportedNodes:
    def __init__(self) -> None:
        self._nodes: dict[int, ReportedNode] = {}
        self._where: dict[int, dict[int, str]] = {}  # crawler id -> node id -> digest

    def cursor(self, node_id: int) -> Cursor | None:
        node = self._nodes.get(node_id)
        return node.cursor if node else None

    def renewal(self, node_id: int) -> str | None:
        node = self._nodes.get(node_id)
        return node.renewal if node else None

    def answered_at(self, node_id: int) -> float | None:
        """When the node's latest answer came; None if it never answered this leader."""
        node = self._nodes.get(node_id)
        return node.answered_at if node else None

    def apply(self, node_id: int, report: NodeReport | None, move_cursor: bool = True) -> set[int]:
        """Take one poll's outcome; the crawlers whose reported placement or digest changed.
        Without `move_cursor` the next poll asks again for what this one answered."""
        node = self._nodes.setdefault(node_id, ReportedNode())
        node.answered = report is not None
        if report is None:
            return set()
        touched: set[int] = set()
        if report.full:
            touched |= self._drop(node_id, node, [c for c in node.digests if c not in report.ids])
        touched |= self._drop(node_id, node, report.removed)
        for crawler_id, digest in report.digests().items():
            if node.digests.get(crawler_id) != digest:
                node.digests[crawler_id] = digest
                self._where.setdefault(crawler_id, {})[node_id] = digest
                touched.add(crawler_id)
        if move_cursor:
            node.cursor = report.cursor
        node.renewal, node.answered_at = report.renewal, report.answered_at
        return touched

    def acked(self, node_id: int, crawler_id: int, digest: str) -> None:
        """A push was acknowledged: the node runs this spec now."""
        node = self._nodes.setdefault(node_id, ReportedNode())
        node.digests[crawler_id] = digest
        self._where.setdefault(crawler_id, {})[node_id] = digest

    def removed(self, node_id: int, crawler_ids: Iterable[int]) -> None:
        node = self._nodes.get(node_id)
        if node is not None:
            self._drop(node_id, node, crawler_ids)

    def forget(self, node_id: int) -> set[int]:
        """A node that is gone (dead, or registered again): the crawlers it held."""
        node = self._nodes.pop(node_id, None)
        if node is None:
            return set()
        return self._drop(node_id, node, list(node.digests))

    def _drop(self, node_id: int, node: ReportedNode, crawler_ids: Iterable[int]) -> set[int]:
        dropped = set()
        for crawler_id in crawler_ids:
            if node.digests.pop(crawler_id, None) is not None:
                dropped.add(crawler_id)
                places = self._where.get(crawler_id, {})
                places.pop(node_id, None)
                if not places:
                    self._where.pop(crawler_id, None)
        return dropped

    def places(self, crawler_id: int) -> dict[int, str]:
        """node id -> digest, for every node reporting the crawler."""
        return self._where.get(crawler_id, {})

    def answered(self, node_id: int) -> bool:
        node = self._nodes.get(node_id)
        return node is not None and node.answered

    def crawlers_on(self, node_id: int) -> list[int]:
        node = self._nodes.get(node_id)
        return list(node.digests) if node else []

    def nodes(self) -> list[int]:
        return list(self._nodes)
