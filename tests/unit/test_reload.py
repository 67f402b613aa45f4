"""Reload planning: push what is missing or changed, remove what moved, leave silent nodes be."""

from __future__ import annotations

import random

import pytest

from blackwidow.monitor.reload import plan_reload
from sources.model import SubscriberSpec


def planned(desired, reported):
    """The plan as (node, crawler) removals and (node, spec) pushes, by crawler id; every
    crawler desired or reported is dirty, and the nodes that reported answered."""
    dirty = set(desired) | {c for running in reported.values() for c in running}

    def places(crawler_id):
        return {n: r[crawler_id] for n, r in reported.items() if crawler_id in r}

    plan = plan_reload(dirty, desired, places, lambda node_id: node_id in reported)
    removals = sorted((n, c) for n, ids in plan.removals.items() for c in ids)
    pushes = sorted(
        ((n, s) for n, specs in plan.pushes.items() for s in specs), key=lambda p: p[1].crawler_id
    )
    return removals, pushes


def spec(crawler_id: int, lease: int | None = None) -> SubscriberSpec:
    return SubscriberSpec(
        crawler_id=crawler_id,
        user_id=1,
        source="rss",
        query={"feeds": [f"https://feed{crawler_id}.example/rss"], "keywords": []},
        item_limit=100,
        lease=lease,
    )


S1, S2, S3 = spec(1), spec(2), spec(3)


@pytest.mark.parametrize(
    ("desired", "reported", "removals", "pushes"),
    [
        pytest.param({}, {}, [], [], id="nothing-anywhere"),
        pytest.param({}, {1: {}, 2: {}}, [], [], id="idle-nodes"),
        pytest.param(
            {1: (10, S1), 2: (20, S2)},
            {10: {1: S1.digest()}, 20: {2: S2.digest()}},
            [],
            [],
            id="digests-match",
        ),
        pytest.param({1: (10, S1)}, {10: {}}, [], [(10, S1)], id="absent-is-pushed"),
        pytest.param(
            {1: (10, spec(1, lease=50))},
            {10: {1: S1.digest()}},
            [],
            [(10, spec(1, lease=50))],
            id="changed-digest-is-pushed",
        ),
        pytest.param(
            {1: (10, S1)}, {10: {1: "stale"}}, [], [(10, S1)], id="unknown-digest-is-pushed"
        ),
        pytest.param(
            {1: (20, S1)},
            {10: {1: S1.digest()}, 20: {}},
            [(10, 1)],
            [(20, S1)],
            id="moved-removed-and-pushed",
        ),
        pytest.param(
            {},
            {10: {1: S1.digest(), 2: S2.digest()}},
            [(10, 1), (10, 2)],
            [],
            id="not-desired-removed",
        ),
        pytest.param(
            {1: (10, S1)},
            {10: {1: S1.digest()}, 20: {1: S1.digest()}},
            [(20, 1)],
            [],
            id="duplicate-on-wrong-node-removed",
        ),
        # node 20's poll failed: nothing is known of it, so it gets neither pushes nor removals
        pytest.param({1: (20, S1)}, {10: {}}, [], [], id="silent-node-no-push"),
        pytest.param(
            {1: (20, S1)},
            {10: {1: S1.digest()}},
            [(10, 1)],
            [],
            id="moved-to-silent-node-still-leaves-old",
        ),
    ],
)
def test_plan(desired, reported, removals, pushes):
    assert planned(desired, reported) == (removals, pushes)


def test_plan_has_removals_and_pushes_in_one_cycle():
    desired = {1: (20, S1), 2: (10, S2)}
    reported = {10: {1: S1.digest(), 3: S3.digest()}, 20: {}}
    removals, pushes = planned(desired, reported)
    assert removals == [(10, 1), (10, 3)]
    assert pushes == [(20, S1), (10, S2)]  # by crawler id


@pytest.mark.parametrize("seed", range(5))
def test_order_is_deterministic(seed):
    """Each node's removals and pushes are in crawler-id order whatever the order the
    mappings were built in."""
    rng = random.Random(seed)
    crawlers = list(range(1, 21))
    nodes = [10, 20, 30]
    desired_items = [(c, (nodes[c % 3], spec(c))) for c in crawlers if c % 4]
    reported_items = [(n, [(c, "old") for c in crawlers if c % 5 == n // 10]) for n in nodes]
    rng.shuffle(desired_items)
    rng.shuffle(reported_items)
    for _, running in reported_items:
        rng.shuffle(running)
    reported = {n: dict(r) for n, r in reported_items}
    dirty = list(crawlers)
    rng.shuffle(dirty)

    def places(crawler_id):
        return {n: r[crawler_id] for n, r in reported.items() if crawler_id in r}

    plan = plan_reload(dirty, dict(desired_items), places, lambda n: n in reported)

    assert all(ids == sorted(ids) for ids in plan.removals.values())
    assert all(
        [s.crawler_id for s in specs] == sorted(s.crawler_id for s in specs)
        for specs in plan.pushes.values()
    )
    assert plan.removals and plan.pushes  # the case exercises both
