"""Reload planning: the pushes and removals that make nodes run what routing wants. Pure.

The plan is a diff of the desired assignment against what each node reported in this
cycle's poll, so an unchanged subscriber costs nothing and a PUT repeated is harmless.
A node whose poll failed is left alone this cycle: nothing is known of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sources.model import SubscriberSpec


@dataclass(frozen=True)
class Plan:
    removals: list[tuple[int, int]] = field(default_factory=list)  # (node id, crawler id)
    pushes: list[tuple[int, SubscriberSpec]] = field(default_factory=list)  # (node id, spec)


def plan_reload(
    desired: Mapping[int, tuple[int, SubscriberSpec]],
    reported: Mapping[int, Mapping[int, str]],
) -> Plan:
    """`desired`: crawler id -> (node id, spec); `reported`: node id -> crawler id -> digest,
    for the nodes that answered their poll. Removals come first in execution, so a moved
    crawler never runs on two nodes past this cycle."""
    removals = [
        (node_id, crawler_id)
        for node_id, running in sorted(reported.items())
        for crawler_id in sorted(running)
        if desired.get(crawler_id, (None,))[0] != node_id
    ]
    pushes = [
        (node_id, spec)
        for crawler_id, (node_id, spec) in sorted(desired.items())
        if node_id in reported and reported[node_id].get(crawler_id) != spec.digest()
    ]
    return Plan(removals=removals, pushes=pushes)
