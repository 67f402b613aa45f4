"""Weighted routing's desired node count, and the placement counts routing reads room from."""

import pytest

from blackwidow.cluster import nodes_needed
from blackwidow.monitor.placement import Placement


@pytest.mark.parametrize(
    ("data_sources", "capacities", "headroom", "expected"),
    [
        (0, [], 0.0, 1),  # never less than one node
        (0, [5, 5], 0.25, 1),
        (10, [10, 1, 1], 0.0, 1),  # the large node alone holds them
        (10, [10, 1, 1], 0.1, 2),  # 11 with headroom: the large one and a small one
        (12, [10, 1, 1], 0.0, 3),
        (20, [10, 1, 1], 0.0, 5),  # 8 short at an average of 4: two more
        (300, [], 0.0, 3),  # no node to say: 100 each
        (8, [1, 3], 0.5, 6),  # 12 needed, 4 held: 8 short, four more at an average of 2
    ],
)
def test_nodes_needed_counts_capacity(data_sources, capacities, headroom, expected):
    assert nodes_needed(data_sources, capacities, headroom) == expected


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
