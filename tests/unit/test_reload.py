"""Reload planning: push what is missing or changed, remove what moved, leave silent nodes be."""

from __future__ import annotations

import random

import pytest

from blackwidow.monitor.reload import Plan, plan_reload
from sources.model import SubscriberSpec


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
    plan = plan_reload(desired, reported)
    assert plan == Plan(removals=removals, pushes=pushes)


def test_plan_has_removals_and_pushes_in_one_cycle():
    desired = {1: (20, S1), 2: (10, S2)}
    reported = {10: {1: S1.digest(), 3: S3.digest()}, 20: {}}
    plan = plan_reload(desired, reported)
    assert plan.removals == [(10, 1), (10, 3)]
    assert plan.pushes == [(20, S1), (10, S2)]  # by crawler id


@pytest.mark.parametrize("seed", range(5))
def test_order_is_deterministic(seed):
    """The plan is sorted (node then crawler for removals, crawler for pushes) whatever the
    order the mappings were built in."""
    rng = random.Random(seed)
    crawlers = list(range(1, 21))
    nodes = [10, 20, 30]
    desired_items = [(c, (nodes[c % 3], spec(c))) for c in crawlers if c % 4]
    reported_items = [(n, [(c, "old") for c in crawlers if c % 5 == n // 10]) for n in nodes]
    rng.shuffle(desired_items)
    rng.shuffle(reported_items)
    for _, running in reported_items:
        rng.shuffle(running)
    plan = plan_reload(dict(desired_items), {n: dict(r) for n, r in reported_items})

    assert plan.removals == sorted(plan.removals)
    assert [s.crawler_id for _, s in plan.pushes] == sorted(s.crawler_id for _, s in plan.pushes)
    expected = plan_reload(
        dict(sorted(desired_items)), {n: dict(sorted(r)) for n, r in sorted(reported_items)}
    )
    assert plan == expected
    assert plan.removals and plan.pushes  # the case exercises both lists
