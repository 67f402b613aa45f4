"""Liveness poller: one GET /subscribers per node per cycle, in parallel. Decides nothing."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from blackwidow.monitor.node_client import (
    NodeClient,
    NodeRejected,
    NodeTarget,
    NodeUnreachable,
)

log = logging.getLogger(__name__)

MAX_PARALLEL_POLLS = 16


@dataclass(frozen=True)
class NodeReport:
    subscribers: list[dict[str, Any]]
    data_sources: list[dict[str, Any]]

    def digests(self) -> dict[int, str]:
        return {int(s["crawler_id"]): str(s["digest"]) for s in self.subscribers}


def _poll(client: NodeClient, node: NodeTarget, assigned: list[int]) -> NodeReport | None:
    try:
        answer = client.poll(node, assigned)
        return NodeReport(list(answer["subscribers"]), list(answer["data_sources"]))
    except (NodeUnreachable, NodeRejected, KeyError, TypeError) as error:
        log.info("poll failed node=%s url=%s error=%s", node.id, node.url, error)
        return None


def poll_all(
    client: NodeClient, nodes: Sequence[NodeTarget], assigned: Mapping[int, list[int]]
) -> dict[int, NodeReport | None]:
    """node id -> its report, or None when it gave no usable answer."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(min(MAX_PARALLEL_POLLS, len(nodes))) as pool:
        futures = {
            node.id: pool.submit(_poll, client, node, assigned.get(node.id, [])) for node in nodes
        }
        return {node_id: future.result() for node_id, future in futures.items()}
