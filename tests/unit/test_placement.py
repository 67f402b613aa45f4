"""The placement counts weighted routing reads: each node's distinct keys, and its room."""

from blackwidow.monitor.placement import Placement


def test_placement_counts_each_nodes_distinct_keys():
    placement = Placement()
    placement.put(1, "rss:a", 7)
    placement.put(2, "rss:a", 7)
    placement.put(3, "rss:b", 7)
    placement.put(4, "rss:c", 8)
    assert (placement.keys_on(7), placement.keys_on(8), placement.node_of_key("rss:a")) == (2, 1, 7)

    placement.pop(1)  # crawler 2 still holds key a there
    assert placement.keys_on(7) == 2
    placement.put(2, "rss:a", 8)  # a move: the key leaves node 7 with its last crawler
    assert (placement.keys_on(7), placement.keys_on(8), placement.node_of_key("rss:a")) == (1, 2, 8)

    placement.pop(3)
    placement.pop(3)  # twice is nothing
    assert (placement.keys_on(7), placement.node_of_key("rss:b"), placement.get(3)) == (
        0,
        None,
        None,
    )
    assert dict(placement.items()) == {2: ("rss:a", 8), 4: ("rss:c", 8)}


def test_room_is_capacity_less_the_larger_of_reported_and_placed_keys():
    placement = Placement()
    for crawler_id, key in enumerate(["rss:a", "rss:b", "rss:b"]):
        placement.put(crawler_id, key, 1)
    capacity = {1: 4, 2: 4, 3: 1}
    assert placement.room(capacity, {1: 1, 2: 3, 3: 2}) == {1: 2, 2: 1, 3: -1}
