"""A user's budget seen from one of several monitor shards: only items stored anywhere use
it up; leases the other shards hold only make it wait."""

from __future__ import annotations

from blackwidow.monitor import quota_grants
from blackwidow.monitor.memory.crawlers import Tracked
from blackwidow.monitor.quota import ShardBudget

USER = 1


def stored(crawler_id: int, count: int) -> Tracked:
    config = (f"uuid-{crawler_id}", USER, "rss", {}, None, None, True, "normal")
    return Tracked(crawler_id, *config, "running", count, count, count, 0.0, None)


def test_leases_held_in_another_shard_do_not_exhaust_a_user():
    budget = ShardBudget(25, held_elsewhere=25, stored_elsewhere=20)
    assert budget.share == 0
    assert quota_grants.exhausted_users({USER: budget}, {USER: [stored(1, 0)]}) == set()


def test_items_stored_in_every_shard_together_exhaust_a_user():
    budget = ShardBudget(25, held_elsewhere=20, stored_elsewhere=20)
    assert quota_grants.exhausted_users({USER: budget}, {USER: [stored(1, 4)]}) == set()
    assert quota_grants.exhausted_users({USER: budget}, {USER: [stored(1, 5)]}) == {USER}
