"""A lost node's leases in the monitor's memory: held, and its crawlers kept off other nodes,
until the node cannot store under them; time passed in."""

from __future__ import annotations

import pytest

from blackwidow.core.node_protocol import Cursor
from blackwidow.monitor import quota_grants
from blackwidow.monitor.memory.crawlers import Tracked
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.poller import NodeReport

LEASE_AFTER = 2.5
BUDGETED, FREE = 1, 2  # user ids: one with an item limit, one without


def crawler(crawler_id: int, user_id: int, item_limit: int | None = None) -> Tracked:
    config = (f"uuid-{crawler_id}", user_id, "rss", {}, item_limit, None, True, "normal")
    return Tracked(crawler_id, *config, "running", 5, 5, 20, 1.0, None)


def memory_with(node_answered_at: float | None) -> ShardMemory:
    """Crawlers 1 (budgeted), 2 (unbounded) and 4 (an item limit of its own, no budget) on
    node 7, which answered at the time given; 3 (budgeted) on no node."""
    memory = ShardMemory(LEASE_AFTER)
    memory.limits = {BUDGETED: 100}
    memory.crawlers = {
        1: crawler(1, BUDGETED),
        2: crawler(2, FREE),
        3: crawler(3, BUDGETED),
        4: crawler(4, FREE, item_limit=40),
    }
    if node_answered_at is not None:
        memory.reported.apply(
            7, NodeReport(Cursor("s", 1), True, [], [], answered_at=node_answered_at)
        )
    for crawler_id in (1, 2, 4):
        memory.reported.acked(7, crawler_id, "digest")
    return memory


@pytest.mark.parametrize(
    ("answered_at", "expected"), [(100.0, 105.0), (None, 55.0)], ids=["answered", "never"]
)
def test_a_lost_nodes_bounded_crawlers_are_held_from_its_last_answer(answered_at, expected):
    """A crawler with an item limit is held as a budgeted one is: the lost node may still
    store it, and a second node counting from the store's count would pass the limit."""
    memory = memory_with(answered_at)
    assert quota_grants.lose_node(memory, 7, leading_since=50.0) == {1, 2, 4}
    assert memory.crawlers[1].lost_until == expected
    assert memory.crawlers[4].lost_until == expected
    assert memory.crawlers[2].lost_until is None  # unbounded: its ids keep it exact
    assert memory.reported.places(1) == {}


@pytest.mark.parametrize(
    ("lost_until", "user_id", "now", "expected"),
    [
        (None, BUDGETED, 0.0, False),
        (105.0, BUDGETED, 104.9, True),
        (105.0, BUDGETED, 105.0, False),
        (105.0, FREE, 104.9, False),  # its user's budget went: it holds no lease
        (105.0, (FREE, 40), 104.9, True),  # its own item limit still bounds it
        (105.0, (FREE, 40), 105.0, False),
    ],
)
def test_held_by_lost_node(lost_until, user_id, now, expected):
    user_id, item_limit = user_id if isinstance(user_id, tuple) else (user_id, None)
    held = crawler(1, user_id, item_limit)
    held.lost_until = lost_until
    assert quota_grants.held_by_lost_node(held, {BUDGETED: 100}, now) is expected


def test_a_new_leader_holds_the_budgeted_crawlers_no_node_reported():
    memory = memory_with(100.0)
    quota_grants.hold_unseen(memory, now=200.0)
    assert [memory.crawlers[c].lost_until for c in (1, 2, 3, 4)] == [None, None, 205.0, None]
    memory.reported.forget(7)  # no node reports the limited crawler either: it is held too
    quota_grants.hold_unseen(memory, now=200.0)
    assert [memory.crawlers[c].lost_until for c in (2, 4)] == [None, 205.0]
    never_polls = ShardMemory()
    never_polls.limits, never_polls.crawlers = {BUDGETED: 100}, {3: crawler(3, BUDGETED)}
    quota_grants.hold_unseen(never_polls, now=200.0)
    assert never_polls.crawlers[3].lost_until is None
