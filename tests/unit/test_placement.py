"""The placement counts weighted routing reads (each node's distinct keys, and its room), and
why the crawlers on no node wait."""

from blackwidow.monitor.placement import Placement
from blackwidow.monitor.placement_rules import Wait, Why


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


def test_a_crawler_on_no_node_is_remembered_with_why_until_it_is_looked_at_again():
    placement = Placement()
    placement.put(1, "rss:a", 7)
    placement.set_aside(1, Wait(Why.NO_ROOM))  # off its node, waiting for room
    placement.set_aside(2, Wait(Why.HELD, 105.0))
    placement.set_aside(3, Wait(Why.NO_NODE))
    placement.set_aside(3, None)  # not to run at all: forgotten
    placement.clear()  # placements are routed afresh; the waiting stay
    assert (placement.get(1), placement.keys_on(7)) == (None, 0)
    assert placement.waiting_again(takes=False) == {2}  # a hold ends with time alone
    assert placement.waiting_again(takes=False) == set()  # looked at: waiting no more
    placement.set_aside(4, Wait(Why.NO_NODE))
    placement.put(4, "rss:b", 8)  # placed: waiting no more
    assert placement.waiting_again(takes=True) == {1}
