"""Weighted routing's desired node count: capacity for the data sources and the headroom."""

import pytest

from blackwidow.node_records import nodes_needed


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
