"""Why health is degraded, one line per reason, only while work is affected: not for a node
that left, nor after a death whose crawlers run elsewhere. Pure."""

import pytest

from blackwidow.health import degraded_reasons

LEADING = [{"shard": "0/1", "leader": True}]


@pytest.mark.parametrize(
    ("shards", "store_ok", "waiting", "suspect_holding", "expected"),
    [
        (LEADING, True, 0, 0, []),  # a handled death, a node that left: no reason
        (
            [{"shard": "0/2", "leader": True}, {"shard": "1/2", "leader": False}],
            True,
            0,
            0,
            ["monitor: no leader for shard 1/2"],
        ),
        (LEADING, False, 0, 0, ["store: does not answer"]),
        (LEADING, True, 3, 0, ["crawlers: 3 pending, waiting for a node to take them"]),
        (LEADING, True, 0, 1, ["nodes: 1 suspect, still holding crawlers"]),
        (
            LEADING,
            False,
            2,
            1,
            [
                "store: does not answer",
                "crawlers: 2 pending, waiting for a node to take them",
                "nodes: 1 suspect, still holding crawlers",
            ],
        ),
    ],
)
def test_reasons_name_the_work_affected(shards, store_ok, waiting, suspect_holding, expected):
    reasons = degraded_reasons(shards, store_ok, waiting, suspect_holding)
    assert reasons == expected
    assert all("\n" not in reason for reason in reasons)
