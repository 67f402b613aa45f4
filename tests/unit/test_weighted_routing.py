"""Weighted routing: shares follow capacity, node changes move only what must move, a full
node takes nothing new, and equal keys land together."""

from collections import Counter

import pytest

from blackwidow.monitor.routing import Router, route_weighted
from tests.unit.test_routing import random_keys

KEYS = random_keys(100_000)


def routed(nodes: list[int], capacity: dict[int, int], keys: list[str] = KEYS) -> list:
    router = Router("weighted")
    router.rebuild(nodes, {}, capacity)
    return router.route_many(keys)


@pytest.mark.parametrize("capacity", [{1: 1, 2: 2, 3: 3}, {1: 1, 2: 2, 3: 3, 4: 4, 5: 5}])
def test_each_node_gets_its_capacity_share_of_the_keys(capacity):
    shares = Counter(routed(sorted(capacity), capacity))
    total = sum(capacity.values())
    for node, weight in capacity.items():
        assert shares[node] / len(KEYS) == pytest.approx(weight / total, abs=0.01)


def test_a_joining_node_takes_only_its_share_and_only_to_itself():
    capacity = {1: 1, 2: 2, 3: 3}
    before = routed([1, 2, 3], capacity)
    after = routed([1, 2, 3, 4], {**capacity, 4: 4})
    moved = [(b, a) for b, a in zip(before, after, strict=True) if a != b]
    assert {a for _, a in moved} == {4}
    assert len(moved) / len(KEYS) == pytest.approx(4 / 10, abs=0.01)


def test_a_leaving_node_moves_only_its_own_keys_in_proportion_to_capacity():
    capacity = {1: 1, 2: 2, 3: 3, 4: 4}
    before = routed([1, 2, 3, 4], capacity)
    after = routed([1, 2, 4], capacity)
    moved = [(b, a) for b, a in zip(before, after, strict=True) if a != b]
    assert {b for b, _ in moved} == {3}
    assert len(moved) == before.count(3)
    took = Counter(a for _, a in moved)
    for node in (1, 2, 4):  # what node 3 had goes out as the capacities left stand
        assert took[node] / len(moved) == pytest.approx(capacity[node] / 7, abs=0.02)


def test_a_rebuilt_router_moves_only_the_leavers_crawlers():
    keys = random_keys(3000)
    router = Router("weighted")
    router.rebuild([1, 2, 3], {}, {1: 1, 2: 2, 3: 3})
    placement = dict(enumerate(zip(keys, router.route_many(keys), strict=True)))
    moved = router.rebuild([1, 3], placement, {1: 1, 3: 3})
    assert set(moved) == {c for c, (_, node) in placement.items() if node == 2}
    assert set(moved.values()) <= {1, 3}


def test_a_capacity_change_moves_keys_toward_the_grown_node_only():
    keys = random_keys(3000)
    router = Router("weighted")
    router.rebuild([1, 2], {}, {1: 1, 2: 1})
    placement = dict(enumerate(zip(keys, router.route_many(keys), strict=True)))
    moved = router.rebuild([1, 2], placement, {1: 1, 2: 3})
    assert set(moved.values()) == {2}
    assert len(moved) / len(keys) == pytest.approx(0.75 - 0.5, abs=0.03)


def test_a_shrunk_node_loses_keys_and_only_it():
    keys = random_keys(3000)
    router = Router("weighted")
    router.rebuild([1, 2], {}, {1: 1, 2: 3})
    placement = dict(enumerate(zip(keys, router.route_many(keys), strict=True)))
    moved = router.rebuild([1, 2], placement, {1: 1, 2: 1})
    assert {placement[c][1] for c in moved} == {2} and set(moved.values()) == {1}
    assert len(moved) / len(keys) == pytest.approx(0.75 - 0.5, abs=0.03)


def test_a_key_on_its_next_best_node_moves_on_a_join_only_to_the_joiner():
    keys = random_keys(2000)
    router = Router("weighted")
    router.rebuild([1, 2], {}, {1: 1, 2: 1})
    router.room = {1: 0}  # node 1 full: every key lands on node 2
    placement = dict(enumerate(zip(keys, router.route_many(keys), strict=True)))
    assert {node for _, node in placement.values()} == {2}
    router.room = {}  # room everywhere now, but node 1 did not join: nothing moves to it
    moved = router.rebuild([1, 2, 3], placement, {1: 1, 2: 1, 3: 1})
    assert set(moved.values()) == {3}
    assert len(moved) / len(keys) == pytest.approx(1 / 3, abs=0.03)


def test_a_full_node_gets_no_new_key_each_goes_to_its_next_best():
    keys = random_keys(5000)
    router = Router("weighted")
    router.rebuild([1, 2, 3], {}, {1: 10, 2: 10, 3: 10})
    free = router.route_many(keys)
    router.room = {2: 0}
    skipped = router.route_many(keys)
    assert 2 not in skipped
    assert all(s == f for f, s in zip(free, skipped, strict=True) if f != 2)
    # the next best: the same keys with node 2 gone altogether
    without = Router("weighted")
    without.rebuild([1, 3], {}, {1: 10, 3: 10})
    assert skipped == without.route_many(keys)


def test_keys_already_on_a_full_node_stay_there():
    router = Router("weighted")
    router.rebuild([1, 2], {}, {1: 1, 2: 1})
    key = next(k for k in random_keys(100) if router.route_many([k]) == [1])
    router.room = {1: 0}
    assert router.route_many([key]) == [2]
    assert router.route_many([key], current={key: 1}) == [1]
    # a rebuild on a joining node keeps it where it is unless routing now prefers the joiner
    moved = router.rebuild([1, 2, 3], {7: (key, 1)}, {1: 1, 2: 1, 3: 1})
    assert moved in ({}, {7: 3})


def test_new_keys_take_a_nodes_room_then_go_elsewhere():
    keys = random_keys(400)
    router = Router("weighted")
    router.rebuild([1, 2], {}, {1: 3, 2: 1})
    router.room = {1: 5, 2: 1000}
    placed = router.route_many(keys)
    assert placed.count(1) == 5
    first_five = [
        k for k, n in zip(keys, routed([1, 2], {1: 3, 2: 1}, keys), strict=True) if n == 1
    ]
    assert [k for k, n in zip(keys, placed, strict=True) if n == 1] == first_five[:5]


def test_no_room_anywhere_places_nothing():
    router = Router("weighted")
    router.rebuild([1, 2], {}, {1: 1, 2: 1})
    router.room = {1: 0, 2: 0}
    assert router.route_many(["rss:a", "rss:b"]) == [None, None]


def test_equal_keys_land_together_and_take_room_once():
    router = Router("weighted")
    router.rebuild([1, 2], {}, {1: 1, 2: 1})
    router.room = {1: 1, 2: 1}
    keys = ["rss:a", "rss:b", "rss:a", "rss:b", "rss:a"]
    placed = router.route_many(keys)
    assert placed[0] == placed[2] == placed[4] is not None
    assert placed[1] == placed[3] is not None


def test_pinned_weighted_routes():
    # a change of the score (or of the hashes under it) must break a test: it would move
    # subscribers on the next hub release
    capacity = {1: 1, 2: 2, 3: 3, 4: 4}
    assert route_weighted("rss:https://example.com/feed.xml", [1, 2, 3, 4], capacity) == 4
    assert route_weighted("rss:https://example.org/a.xml", [4, 3, 2, 1], capacity) == 2
    assert route_weighted("twitter:credential-2", [1, 2, 3, 4], capacity) == 1
