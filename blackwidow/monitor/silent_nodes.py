"""Nodes that do not answer polls: each one's silence as one outage (a warning when its polls
start failing, a line when it answers again, with how long it was silent), and the back-off
of probes to the nodes declared dead. Time is passed in; nothing here sends a poll.

The failure detector judges every failed poll of a live node; what backs off is only the
probing of a dead one (docs/node-protocol.md, "Generations"), which matters only once it can
be reached again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from blackwidow.core.outages import Outage
from blackwidow.node_client import NodeTarget
from sources.backoff import Backoff

log = logging.getLogger(__name__)


class Silences:
    """One outage per node whose polls fail, shared by the poll threads of one shard."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._outages: dict[int, Outage] = {}

    def failed(self, node: NodeTarget, error: BaseException) -> None:
        with self._lock:
            outage = self._outages.get(node.id)
            if outage is None:
                outage = self._outages[node.id] = Outage(
                    log,
                    "node",
                    lost="unreachable",
                    back="answers again",
                    clock=self._clock,
                    node=node.id,
                    url=node.url,
                )
        outage.failed(error)

    def answered(self, node_id: int) -> None:
        with self._lock:
            outage = self._outages.pop(node_id, None)
        if outage is not None:
            outage.answered()

    def keep(self, listed: Collection[int]) -> None:
        """Forget, in silence, the nodes no longer listed for polls (deleted, or dead past
        their probing): no answer from them is coming to end their outage."""
        with self._lock:
            for node_id in set(self._outages) - set(listed):
                del self._outages[node_id]


@dataclass
class _Probing:
    due_at: float
    failures: int = 0


class ProbeSchedule:
    """When each dead node is probed next: at the first poll after it is declared dead, then
    after each unanswered probe a longer wait (`backoff`, capped). Forgotten once it is no
    longer dead (it registered again) or no longer probed."""

    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self._probing: dict[int, _Probing] = {}

    def due(self, probes: Sequence[NodeTarget], now: float) -> list[NodeTarget]:
        """The probes to send at `now`, of the dead nodes listed for probing."""
        listed = {probe.id for probe in probes}
        for node_id in set(self._probing) - listed:
            del self._probing[node_id]
        for probe in probes:
            self._probing.setdefault(probe.id, _Probing(due_at=now))
        return [probe for probe in probes if self._probing[probe.id].due_at <= now]

    def probed(self, node_id: int, answered: bool, now: float) -> None:
        """A probe went out at `now`: the next one at once when the node answered (it learns
        it was written off and registers again), else after a longer wait."""
        probing = self._probing.get(node_id)
        if probing is None:
            return
        probing.failures = 0 if answered else probing.failures + 1
        probing.due_at = now + self._backoff.delay(probing.failures)
