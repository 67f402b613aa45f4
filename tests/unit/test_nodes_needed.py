"""The desired node count: capacity for the data sources and the headroom, the floor, and an
answer that holds still while the crawlers do."""

import pytest

from blackwidow.node_records import desired, nodes_needed


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


@pytest.mark.parametrize(
    ("data_sources", "capacities", "known", "weighted", "floor", "expected"),
    [
        (0, [], None, False, 2, 2),  # the floor: a spare node however few crawlers
        (1, [100], 100, False, 2, 2),  # one would hold it: still two
        (300, [100, 100], 100, False, 2, 3),  # above the floor, the crawlers decide
        (300, [100, 100], 100, True, 2, 3),
        (4, [2], 2, False, 1, 2),
        (4, [], 2, False, 1, 2),  # no node live: the latest one's capacity, not 100
        (4, [], 2, True, 1, 2),
        (4, [], None, False, 1, 1),  # none ever registered: 100 each
    ],
)
def test_desired_keeps_its_floor_and_the_capacity_nodes_declared(
    data_sources, capacities, known, weighted, floor, expected
):
    assert desired(data_sources, capacities, known, weighted, 0.0, floor) == expected


def test_desired_holds_still_through_scale_in_and_out_while_the_crawlers_do():
    """An autoscaler's rounds with steady crawlers: whatever nodes it starts or stops (even
    all of them), the answer it acts on stays the same, so it never flaps."""
    rounds = [[2, 2], [2, 2, 2], [2, 2, 2, 2], [2], []]
    for weighted in (False, True):
        answers = {desired(6, live, 2, weighted, 0.0, 2) for live in rounds}
        assert answers == {3}, weighted
