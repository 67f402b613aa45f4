"""Carrying out a reconcile plan on the nodes: removals on every node first, then pushes, and
what each node answered. A moved crawler never runs on two nodes past the pass.

An answer is either an acknowledgement (the node's status for the crawler), a rejection (the
node's reason), or none: a push or removal that got no answer is `unsure`, since its node may
run the crawler under its old lease or the one sent (monitor.quota_grants.hold_unanswered).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from blackwidow.monitor.figures import MonitorFigures
from blackwidow.monitor.placement_rules import push_waits
from blackwidow.monitor.poller import in_parallel
from blackwidow.monitor.reload import Plan
from blackwidow.node_client import NodeClient, NodeRejected, NodeTarget, NodeUnreachable

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    acked: dict[int, tuple[int, dict]] = field(default_factory=dict)  # crawler -> (node, status)
    rejected: dict[int, str] = field(default_factory=dict)  # crawler -> reason
    removed: dict[int, list[int]] = field(default_factory=dict)  # node -> crawler ids
    final_counts: dict[int, int] = field(default_factory=dict)  # crawler -> the store's count
    # no answer came, or a removal's count did not: the node may store on under its lease
    unsure: set[int] = field(default_factory=set)


def execute(
    plan: Plan,
    targets: dict[int, NodeTarget],
    client: NodeClient,
    figures: MonitorFigures,
    leading: Callable[[], bool],
    budgeted: Callable[[int], bool],
) -> Outcome:
    """Send the plan's removals, then (while still leading) its pushes, each node's in one
    batch and the nodes in parallel, but none that placement_rules.push_waits holds back."""
    outcome = Outcome()

    def remove(target: NodeTarget) -> None:
        ids = plan.removals[target.id]
        try:
            counts, uncounted = client.remove_many(target, ids)
            outcome.final_counts.update(counts)
            outcome.unsure.update(uncounted)  # its write in flight counts against the lease
            outcome.removed[target.id] = ids
            figures.count("removals.ok", len(ids))
        except (NodeUnreachable, NodeRejected) as error:
            figures.count("removals.failed", len(ids))
            log.info("remove failed node=%s crawlers=%s error=%s", target.id, len(ids), error)
            if isinstance(error, NodeUnreachable):
                outcome.unsure.update(ids)

    def held(crawler_id: int) -> bool:
        return push_waits(crawler_id in outcome.unsure, budgeted(crawler_id))

    def push(target: NodeTarget) -> None:
        specs = [spec for spec in plan.pushes[target.id] if not held(spec.crawler_id)]
        if not specs:
            return
        try:
            results = client.push_many(target, specs)
        except (NodeUnreachable, NodeRejected) as error:
            figures.count("pushes.failed", len(specs))
            log.info("push failed node=%s crawlers=%s error=%s", target.id, len(specs), error)
            if isinstance(error, NodeUnreachable):
                outcome.unsure.update(spec.crawler_id for spec in specs)
            return
        for crawler_id, result in results.items():
            if "status" in result:
                outcome.acked[crawler_id] = (target.id, result["status"])
            else:
                outcome.rejected[crawler_id] = str(result["error"]["message"])
        rejected = sum(1 for result in results.values() if "status" not in result)
        figures.count("pushes.ok", len(results) - rejected)
        figures.count("pushes.rejected", rejected)

    in_parallel([targets[n] for n in plan.removals if n in targets], remove)
    if leading():
        in_parallel([targets[n] for n in plan.pushes if n in targets], push)
    return outcome
