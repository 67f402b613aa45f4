"""Routing: stable, order-independent, even, and (rendezvous) minimal movement."""

import json
import os
import random
import subprocess
import sys
from collections import Counter

import pytest

from blackwidow.monitor.routing import (
    ROUTERS,
    Router,
    assign,
    route_modulo,
    route_rendezvous,
)

STRATEGIES = sorted(ROUTERS)


def random_keys(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"rss:https://feed{rng.getrandbits(64):x}.example/{i}" for i in range(count)]


@pytest.mark.parametrize(
    ("route", "key", "nodes", "expected"),
    [
        # Pinned: a change of the hash (or of how nodes are ordered) must break a test,
        # because it would move every running subscriber on the next hub release.
        # sha1("rss:https://example.com/feed.xml")[:8] = 2275569054693617154; % 10 = 4 -> node 5
        (route_modulo, "rss:https://example.com/feed.xml", list(range(1, 11)), 5),
        (route_modulo, "twitter:credential-1", list(range(10, 0, -1)), 10),
        # rendezvous weights: murmur3's finaliser over sha1(key)[:8] xor sha1("node/<id>")[:8]
        (route_rendezvous, "rss:https://example.com/feed.xml", list(range(1, 11)), 10),
        (route_rendezvous, "twitter:credential-1", list(range(10, 0, -1)), 7),
    ],
)
def test_pinned_routes(route, key, nodes, expected):
    assert route(key, nodes) == expected


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_same_key_same_node(strategy):
    route = ROUTERS[strategy]
    for key in random_keys(50):
        assert route(key, [1, 2, 3, 4]) == route(key, [1, 2, 3, 4])


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("order", [[3, 1, 4, 2, 9], [9, 4, 3, 2, 1], [1, 2, 3, 4, 9, 4, 1]])
def test_independent_of_node_order(strategy, order):
    route = ROUTERS[strategy]
    for key in random_keys(200):
        assert route(key, order) == route(key, [1, 2, 3, 4, 9])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_spread_is_roughly_even(strategy):
    route = ROUTERS[strategy]
    keys = random_keys(1000)
    per_node = Counter(route(key, [10, 20, 30, 40]) for key in keys)
    assert set(per_node) == {10, 20, 30, 40}
    for node_id, count in per_node.items():
        assert 150 <= count <= 350, (node_id, count)


@pytest.mark.parametrize("route", [route_modulo, route_rendezvous])
def test_no_nodes_is_an_error(route):
    with pytest.raises(ValueError):
        route("rss:x", [])


def test_rendezvous_removing_a_node_moves_only_its_keys():
    keys = random_keys(1000)
    before = {key: route_rendezvous(key, [1, 2, 3, 4, 5]) for key in keys}
    after = {key: route_rendezvous(key, [1, 2, 4, 5]) for key in keys}
    on_removed = [key for key in keys if before[key] == 3]
    assert on_removed
    for key in keys:
        if before[key] != 3:
            assert after[key] == before[key], key
        else:
            assert after[key] in {1, 2, 4, 5}


def test_rendezvous_adding_a_node_moves_keys_only_to_it():
    keys = random_keys(1000)
    before = {key: route_rendezvous(key, [1, 2, 3, 4, 5]) for key in keys}
    after = {key: route_rendezvous(key, [1, 2, 3, 4, 5, 6]) for key in keys}
    moved = [key for key in keys if after[key] != before[key]]
    assert moved
    assert all(after[key] == 6 for key in moved)


def test_modulo_moves_many_keys_on_a_node_change():
    """Why modulo routing makes a node change a hard reload: most keys move, not just 1/5."""

    def moved(route) -> int:
        return sum(route(k, [1, 2, 3, 4, 5]) != route(k, [1, 2, 4, 5]) for k in random_keys(1000))

    assert moved(route_modulo) > 0
    assert moved(route_modulo) > moved(route_rendezvous)


@pytest.mark.parametrize(
    ("source_keys", "nodes", "strategy", "expected"),
    [
        ({}, [1, 2], "modulo", {}),
        ({1: "rss:a", 2: "rss:b"}, [], "modulo", {}),
        ({1: "rss:a", 2: "rss:b"}, [], "rendezvous", {}),
        ({1: "rss:a", 2: "rss:b", 3: "rss:a"}, [7], "rendezvous", {1: 7, 2: 7, 3: 7}),
    ],
)
def test_assign_table(source_keys, nodes, strategy, expected):
    assert assign(source_keys, nodes, strategy) == expected


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_assign_routes_every_crawler_and_shares_by_source_key(strategy):
    keys = random_keys(40)
    source_keys = {crawler_id: keys[crawler_id % 20] for crawler_id in range(40)}
    assignment = assign(source_keys, [5, 6, 7], strategy)
    assert set(assignment) == set(source_keys)
    for crawler_id, key in source_keys.items():
        assert assignment[crawler_id] == ROUTERS[strategy](key, [5, 6, 7])
        assert assignment[crawler_id] == assignment[(crawler_id + 20) % 40]


@pytest.mark.parametrize("nodes", [[], [1]])
def test_assign_unknown_strategy_is_an_error(nodes):
    with pytest.raises(ValueError, match="unknown routing strategy"):
        assign({1: "rss:a"}, nodes, "round-robin")


_CHILD = """
import json, sys
from blackwidow.monitor.routing import ROUTERS
keys = json.load(sys.stdin)
print(json.dumps({s: [ROUTERS[s](k, [1, 2, 3, 4, 5]) for k in keys] for s in sorted(ROUTERS)}))
"""


@pytest.mark.parametrize("hash_seed", ["1", "4242"])
def test_stable_across_processes(hash_seed):
    """Another process, with another str hash seed, routes every key the same way."""
    keys = random_keys(200)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(keys),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    here = {s: [ROUTERS[s](k, [1, 2, 3, 4, 5]) for k in keys] for s in STRATEGIES}
    assert json.loads(child.stdout) == here


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_router_routes_as_the_single_key_functions_do(strategy):
    keys = random_keys(3000)  # more than one chunk of keys weighed at once
    router = Router(strategy)
    router.nodes = (2, 3, 5, 8, 13)
    assert router.route_many(keys) == [ROUTERS[strategy](k, [2, 3, 5, 8, 13]) for k in keys]


def test_a_router_rebuilt_after_nodes_die_moves_only_their_crawlers():
    keys = random_keys(2000)
    router = Router("rendezvous")
    router.rebuild(range(1, 11), {})
    placement = {
        c: (k, n) for c, (k, n) in enumerate(zip(keys, router.route_many(keys), strict=True))
    }

    moved = router.rebuild([1, 2, 4, 5, 6, 7, 9, 10], placement)

    on_dead = {c for c, (_, node) in placement.items() if node in (3, 8)}
    assert set(moved) == on_dead
    assert all(node not in (3, 8) for node in moved.values())
    assert moved == {
        c: route_rendezvous(placement[c][0], [1, 2, 4, 5, 6, 7, 9, 10]) for c in on_dead
    }


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_router_rebuilt_after_a_node_joins_moves_what_routing_now_says(strategy):
    keys = random_keys(1000)
    router = Router(strategy)
    router.rebuild([1, 2, 3], {})
    placement = {
        c: (k, n) for c, (k, n) in enumerate(zip(keys, router.route_many(keys), strict=True))
    }

    moved = router.rebuild([1, 2, 3, 4], placement)

    after = {c: ROUTERS[strategy](k, [1, 2, 3, 4]) for c, (k, _) in placement.items()}
    assert moved == {c: n for c, n in after.items() if n != placement[c][1]}
    if strategy == "rendezvous":
        assert set(moved.values()) == {4}


def test_a_router_without_nodes_moves_nothing_and_routes_nowhere():
    router = Router("modulo")
    assert router.rebuild([], {1: ("rss:a", 4)}) == {}
    with pytest.raises(ValueError):
        router.route_many(["rss:a"])
