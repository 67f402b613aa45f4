"""Reload planning: the pushes and removals that make nodes run what routing wants. Pure.

The plan diffs the wanted placement of the crawlers given (the dirty ones) against what
each node last reported, so an unchanged subscriber costs nothing and a PUT repeated is
harmless. A node whose latest poll failed is left alone: nothing is known of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from sources.model import SubscriberSpec


@dataclass
class Plan:
    """Per node, in crawler-id order; removals are sent before pushes."""

    removals: dict[int, list[int]] = field(default_factory=dict)  # node -> crawler ids
    pushes: dict[int, list[SubscriberSpec]] = field(default_factory=dict)  # node -> specs


def plan_reload(
    crawler_ids: Iterable[int],
    desired: Mapping[int, tuple[int, SubscriberSpec]],
    places: Callable[[int], Mapping[int, str]],
    answered: Callable[[int], bool],
) -> Plan:
    """`desired`: crawler id -> (node id, spec) for those that should run; `places`: where
    nodes report a crawler, node id -> digest; `answered`: whether a node's latest poll did.
    Removals run first, so a moved crawler never runs on two nodes past the pass."""
    plan = Plan()
    for crawler_id in sorted(crawler_ids):
        node_id, spec = desired.get(crawler_id, (None, None))
        reported = places(crawler_id)
        for place in sorted(reported):
            if place != node_id and answered(place):
                plan.removals.setdefault(place, []).append(crawler_id)
        if spec is None or node_id is None or not answered(node_id):
            continue
        if reported.get(node_id) != spec.digest():
            plan.pushes.setdefault(node_id, []).append(spec)
    return plan
