"""Quota leases over the monitor's memory: the ledger side of blackwidow.monitor.quota's plans.

Grants enter the ledger (and SQL) before they are pushed, and shrinks only once a node has
confirmed them, so the ledger never says less than a node may store. A lost node may store
until its leases lapse (quota.lost_lease_until): its bounded crawlers (an item limit, or a
user's budget) run nowhere else before. Unbounded ones move at once: a second node's copies of
their items are the same items.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from blackwidow.monitor.memory.crawlers import Tracked
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.quota import (
    LeaseView,
    ShardBudget,
    exhausted,
    lost_lease_until,
    plan_leases,
)

MIN_GRANT = 10


def bounded(crawler: Tracked, limited_users: Collection[int]) -> bool:
    """A crawler with a ceiling a second node storing at once could pass: its own item limit,
    or its user's budget (`limited_users`: the users with one)."""
    return crawler.item_limit is not None or crawler.user_id in limited_users


def exhausted_users(
    budgets: Mapping[int, ShardBudget], by_user: Mapping[int, Iterable[Tracked]]
) -> set[int]:
    """Users whose crawlers, in every shard, have together stored their whole item budget
    (leases held elsewhere do not exhaust a user: they go back when unused)."""
    return {
        user_id
        for user_id, budget in budgets.items()
        if exhausted(
            budget.limit - budget.stored_elsewhere,
            (c.items_collected for c in by_user.get(user_id, ())),
        )
    }


def plan(
    budget: ShardBudget, owned: Collection[Tracked], running: Collection[int], horizon: float
) -> dict[int, int]:
    """The lease to push for each of one user's crawlers; grants raise the ledger now."""
    views = [
        LeaseView(c.id, c.items_collected, c.lease, c.rate, c.item_limit, c.id in running)
        for c in owned
    ]
    wanted_elsewhere = budget.starved_elsewhere * MIN_GRANT
    changes = plan_leases(budget.share, views, horizon, MIN_GRANT, wanted_elsewhere)
    pushed: dict[int, int] = {}
    for crawler in owned:
        target = changes.get(crawler.id, crawler.lease)
        if target > crawler.lease:
            crawler.lease = target
        pushed[crawler.id] = target
    return pushed


def hold_unanswered(
    crawler: Tracked, budgets: Mapping[int, ShardBudget], lease_after: float, now: float
) -> None:
    """A push or removal of a bounded crawler got no answer: its node may have taken the
    lease sent, or still store under the one it had, so the lease stays counted and the
    crawler runs nowhere else until that lease would have lapsed, as a lost node's (or until
    a node reports it, which tells where it runs)."""
    if not bounded(crawler, budgets) or not lease_after:
        return
    until = lost_lease_until(now, lease_after)
    crawler.lost_until = max(crawler.lost_until or until, until)


def confirm(crawler: Tracked, status: dict[str, Any]) -> None:
    """A node acknowledged a push: the lease it reports is now the one in force."""
    if status.get("lease") is not None:
        crawler.lease = int(status["lease"])


def release(crawler: Tracked) -> None:
    """A crawler that runs nowhere holds no budget beyond what it stored."""
    crawler.lease = crawler.items_collected


def held_by_lost_node(crawler: Tracked, limited_users: Collection[int], now: float) -> bool:
    """A lost node may still store under this crawler's lease, so it runs nowhere else yet
    (placement_rules.whether: it waits, looked at every pass, until that ends)."""
    until = crawler.lost_until
    return until is not None and now < until and bounded(crawler, limited_users)


def hold_unseen(memory: ShardMemory, now: float) -> None:
    """A new leader cannot know on which nodes its predecessor renewed leases: a bounded
    crawler that no node reported at the first poll waits out a lost node's leases (memory's
    lock held)."""
    if not memory.lease_after:
        return
    until = lost_lease_until(now, memory.lease_after)
    for crawler in memory.crawlers.values():
        if bounded(crawler, memory.limits) and not memory.reported.places(crawler.id):
            crawler.lost_until = until


def lose_node(memory: ShardMemory, node_id: int, leading_since: float) -> set[int]:
    """Forget a node (memory's lock held); the crawlers it ran. Bounded ones keep their
    leases, and run nowhere else, until the node cannot store under them: counted from its
    last answer, or from when this leader began if it never answered this one."""
    last = memory.reported.answered_at(node_id)
    dropped = memory.reported.forget(node_id)
    until = lost_lease_until(leading_since if last is None else last, memory.lease_after)
    for crawler_id in dropped:
        crawler = memory.crawlers.get(crawler_id)
        if crawler is not None and bounded(crawler, memory.limits):
            crawler.lost_until = max(crawler.lost_until or until, until)
    return dropped
