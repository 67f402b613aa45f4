"""Liveness poller: one GET /subscribers per node per cycle, in parallel. Decides nothing.

Each poll names the cursor of the node's last answer the hub applied, so a node answers
with what changed since then: a steady poll carries almost nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from blackwidow.core.node_protocol import Cursor, ProtocolError, Renewal
from blackwidow.monitor.figures import MonitorFigures
from blackwidow.monitor.silent_nodes import Silences
from blackwidow.node_client import (
    NodeClient,
    NodeRejected,
    NodeTarget,
    NodeUnreachable,
)

MAX_PARALLEL_CALLS = 64  # a node that times out holds up one of them, not the poll


@dataclass(frozen=True)
class NodeLoad:
    """What a node said of its load: all its data sources (whichever shard polled), and its
    process's CPU (percent of one core) and memory in use, when it measures them."""

    data_sources: int
    cpu_percent: float | None = None
    memory_bytes: int | None = None

    @classmethod
    def from_answer(cls, load: dict[str, Any]) -> NodeLoad:
        cpu, memory = load.get("cpu_percent"), load.get("memory_bytes")
        return cls(
            data_sources=int(load["data_sources"]),
            cpu_percent=None if cpu is None else float(cpu),
            memory_bytes=None if memory is None else int(memory),
        )


@dataclass(frozen=True)
class NodeReport:
    cursor: Cursor
    full: bool  # everything the node runs, rather than the changes since the cursor sent
    subscribers: list[dict[str, Any]]  # changed (or, when full, all) statuses
    data_sources: list[dict[str, Any]]
    removed: list[int] = field(default_factory=list)
    subscriber_total: int = 0
    data_source_total: int = 0
    held: int = 0  # items the node holds while its store or queue is down
    answered_at: float = 0.0  # when the answer came: the heartbeat, whatever other nodes do
    asked_at: float | None = None  # when the poll went out (a late one is the hub's doing)
    renewal: str | None = None  # the node's token, echoed by the next poll to renew its leases
    departed: list[dict[str, Any]] = field(default_factory=list)  # stopped sources' final counts
    departed_subscribers: list[dict[str, Any]] = field(default_factory=list)  # ... subscribers'
    load: NodeLoad | None = None  # None from a node too old to report it

    def digests(self) -> dict[int, str]:
        return {int(s["crawler_id"]): str(s["digest"]) for s in self.subscribers}

    @property
    def ids(self) -> set[int]:
        return {int(s["crawler_id"]) for s in self.subscribers}

    @classmethod
    def from_answer(
        cls, answer: dict[str, Any], answered_at: float = 0.0, asked_at: float | None = None
    ) -> NodeReport:
        totals = answer.get("totals") or {}
        subscribers = list(answer["subscribers"])
        data_sources = list(answer["data_sources"])
        renewal = answer.get("renewal")
        load = answer.get("load")
        return cls(
            cursor=Cursor.parse(str(answer["cursor"])) or Cursor("", 0),
            full=bool(answer.get("full", True)),
            subscribers=subscribers,
            data_sources=data_sources,
            removed=[int(c) for c in answer.get("removed", [])],
            subscriber_total=int(totals.get("subscribers", len(subscribers))),
            data_source_total=int(totals.get("data_sources", len(data_sources))),
            held=int(totals.get("held", 0)),
            answered_at=answered_at,
            asked_at=asked_at,
            renewal=renewal if _is_token(renewal) else None,
            departed=list(answer.get("departed_data_sources") or []),
            departed_subscribers=list(answer.get("departed_subscribers") or []),
            load=NodeLoad.from_answer(load) if isinstance(load, dict) else None,
        )


def _is_token(value: Any) -> bool:
    """A renewal token fit to echo in a header: short, printable, one word."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= 80
        and value.isprintable()
        and (" " not in value)
    )


Since = tuple[Cursor | None, Renewal | None]  # what a poll carries from the node's last answer


def _poll(
    client: NodeClient,
    node: NodeTarget,
    since: Since,
    clock: Callable[[], float],
    unanswered: dict[int, tuple[float, float]],
    silences: Silences | None,
) -> NodeReport | None:
    asked_at = clock()
    try:
        report = NodeReport.from_answer(client.poll(node, *since), clock(), asked_at)
    except (NodeUnreachable, NodeRejected, KeyError, TypeError, ValueError, ProtocolError) as error:
        unanswered[node.id] = (asked_at, clock())
        if silences is not None:  # one line when its polls start failing, not one a poll
            silences.failed(node, error)
        return None
    if silences is not None:
        silences.answered(node.id)
    return report


def poll_all(
    client: NodeClient,
    nodes: Sequence[NodeTarget],
    since_of: Callable[[int], Since],
    clock: Callable[[], float],
    unanswered: dict[int, tuple[float, float]] | None = None,
    figures: MonitorFigures | None = None,
    silences: Silences | None = None,
) -> dict[int, NodeReport | None]:
    """node id -> its report, or None when it gave no usable answer; for those, `unanswered`
    gets when their poll went out and when it failed (the node's silence is judged then,
    however long the other nodes' polls took). `figures` get how long each answer took;
    `silences` when a node stops answering and when it answers again."""
    failed = {} if unanswered is None else unanswered
    reports = in_parallel(
        nodes, lambda node: _poll(client, node, since_of(node.id), clock, failed, silences)
    )
    if figures is not None:
        answered = {n: r for n, r in reports.items() if r is not None and r.asked_at is not None}
        figures.polled({n: r.answered_at - r.asked_at for n, r in answered.items()}, reports)
    return reports


def in_parallel(nodes: Sequence[NodeTarget], call: Callable[[NodeTarget], Any]) -> dict[int, Any]:
    """node id -> call(node), across nodes at once (bounded): one slow node holds up no other."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(min(MAX_PARALLEL_CALLS, len(nodes))) as pool:
        futures = {node.id: pool.submit(call, node) for node in nodes}
        return {node_id: future.result() for node_id, future in futures.items()}
