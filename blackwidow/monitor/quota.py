"""Quota leases: each crawler's ceiling on stored items, so a user's budget is never overshot. Pure.

A lease is an absolute ceiling on a crawler's total stored item count: the node
stores while count < min(item_limit, lease), with no round trip per item. The
hub's ledger keeps, for each user, sum(max(lease, count)) <= user_limit. Leases
grow by grants from the free budget and shrink only once the node confirms (it
answers max(new lease, its count)). This module plans; the monitor pushes the
new leases and records the confirmations.

A node the hub loses (declared dead, cut off) may still store under its leases until
they lapse on its own clock; `lost_lease_until` says how long the hub keeps them.

With several monitor shards each leader plans only its own crawlers, from what the others
hold (`ShardBudget`): their starved crawlers take a share of the free budget that is left
ungranted, and make idle leases here go back, so budget flows to where items are.
"""

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ShardBudget:
    """One user's budget as one shard's leader sees it (the other shards as SQL last said)."""

    limit: int  # the user's whole budget
    held_elsewhere: int = 0  # other shards' leases (or counts that ran ahead)
    stored_elsewhere: int = 0  # items other shards' crawlers stored
    starved_elsewhere: int = 0  # other shards' crawlers with no room (waits_for_budget)

    @property
    def share(self) -> int:
        """What this shard may hold: the budget less what the others hold."""
        return self.limit - self.held_elsewhere


@dataclass(frozen=True)
class LeaseView:
    """What the hub knows of one of a user's crawlers when it plans leases."""

    crawler_id: int
    count: int  # items stored so far (latest poll)
    lease: int  # current ledger value (>= count once confirmed)
    rate: float  # recent items/second (>= 0)
    item_limit: int | None  # the crawler's own limit
    running: bool  # assigned and enabled; a crawler not running can only be shrunk to its count


def lost_lease_until(last_answer_at: float, lease_after: float) -> float:
    """Until when (the hub's clock) a node the hub lost may still store under its leases.

    The node stops starting writes `lease_after` after the last answer whose renewal a poll
    brought it (spawn.pool.renewals), and that answer left it before the hub received its
    latest one, at `last_answer_at`. A second `lease_after` covers a write started just
    before the lapse and the two clocks' rates; a write still in flight after that (a store
    timing out slower, a paused process) is the one thing this cannot fence.
    """
    return last_answer_at + 2 * lease_after


def exhausted(user_limit: int, counts: Iterable[int]) -> bool:
    """Whether the user's crawlers have together stored their whole budget."""
    return sum(counts) >= user_limit


def plan_leases(
    user_limit: int,
    crawlers: Sequence[LeaseView],
    horizon: float,
    min_grant: int,
    wanted_elsewhere: int = 0,
) -> dict[int, int]:
    """New lease per crawler id (only those that change).

    Grants come from the budget free now. Budget that a shrink releases is not
    granted in the same call: until the node confirms the lower lease it may
    still store up to the old one. `wanted_elsewhere` is what other shards' crawlers
    want: it competes for the free budget like a crawler's want, and its share stays free.
    """
    if horizon < 0 or min_grant < 0:
        raise ValueError(f"horizon and min_grant must be >= 0, got {horizon!r}, {min_grant!r}")
    free = max(user_limit - sum(_held(c) for c in crawlers), 0)
    plan: dict[int, int] = {}
    wants: dict[int, int] = {}
    for crawler in crawlers:
        need = _need(crawler, horizon, min_grant)
        shrunk = _shrink_to(crawler, need)
        if shrunk is not None:
            plan[crawler.crawler_id] = shrunk
        elif crawler.running and _headroom(crawler) < need:
            wants[crawler.crawler_id] = need - _headroom(crawler)
    idle = {c.crawler_id for c in crawlers if _idle(c, horizon)}
    busy = {c: want for c, want in wants.items() if c not in idle}
    if sum(busy.values()) + wanted_elsewhere > free:
        _reclaim_idle(crawlers, plan, wants, horizon)
    # idle crawlers get only what busy ones leave: an idle crawler's own want never takes
    # back its lease, to grant it again the next cycle. They share it with other shards'
    # waiting crawlers as equals: two shards each leaving it all to the other's would leave
    # it to nobody
    busy_grants = _split(free, busy, wanted_elsewhere)
    left = free - sum(busy_grants.values())
    idle_wants = {c: want for c, want in wants.items() if c in idle}
    held = {c.crawler_id: _held(c) for c in crawlers}
    grants = {**busy_grants, **_split(left, idle_wants, wanted_elsewhere)}
    for crawler_id, grant in grants.items():
        if grant > 0:
            plan[crawler_id] = held[crawler_id] + grant
    return plan


def waits_for_budget(crawler: LeaseView) -> bool:
    """Whether another shard's crawler waits for budget: running, below its own limit, with
    no room under its lease. Its rate says nothing: it decays while the crawler cannot store."""
    below_limit = crawler.item_limit is None or crawler.count < crawler.item_limit
    return crawler.running and below_limit and _headroom(crawler) <= 0


def _held(crawler: LeaseView) -> int:
    """Budget the crawler holds: its lease, or its count should a poll run ahead of the ledger."""
    return max(crawler.lease, crawler.count)


def _headroom(crawler: LeaseView) -> int:
    return _held(crawler) - crawler.count


def _need(crawler: LeaseView, horizon: float, min_grant: int) -> int:
    """Items the crawler should be able to store over the horizon, within its own limit."""
    need = max(min_grant, math.ceil(crawler.rate * horizon))
    if crawler.item_limit is not None:
        need = min(need, max(crawler.item_limit - crawler.count, 0))
    return need


def _shrink_to(crawler: LeaseView, need: int) -> int | None:
    """Lower lease for a stopped or hoarding crawler (headroom > 2 * need); None to keep it."""
    if not crawler.running:
        target = crawler.count
    elif _headroom(crawler) > 2 * need:
        target = crawler.count + need
    else:
        return None
    return target if target < crawler.lease else None


def _reclaim_idle(
    crawlers: Sequence[LeaseView], plan: dict[int, int], wants: dict[int, int], horizon: float
) -> None:
    """When the free budget cannot cover the wants, leases idle crawlers hold unused go back.

    Otherwise the last items of a budget could sit for ever in leases of crawlers that store
    nothing, while a busy one waits. Idle is expecting less than one item over the horizon:
    a rate that decays by halves after the last item never reaches zero. An idle crawler
    asks again next cycle; should it store something meanwhile, its rate earns it a share.
    """
    for crawler in crawlers:
        idle = _idle(crawler, horizon) and crawler.crawler_id not in plan
        if idle and _headroom(crawler) > 0 and crawler.count < crawler.lease:
            plan[crawler.crawler_id] = crawler.count
            wants.pop(crawler.crawler_id, None)


def _idle(crawler: LeaseView, horizon: float) -> bool:
    """Running, but expecting less than one item over the horizon."""
    return crawler.running and crawler.rate * horizon < 1


def _split(free: int, wants: dict[int, int], withheld: int = 0) -> dict[int, int]:
    """Grant every want if free covers them all, else share free in proportion to the wants
    and `withheld` (a want granted to nobody here: its share stays free).

    Shares are floored, then the remainder goes one item at a time to the largest fractions
    (ties in crawler-id order), so a last item goes where it is wanted most; the total never
    exceeds free and no share exceeds its want. The remainder stays here: leaders of two
    shards each leaving the last item to the other would leave it to nobody.
    """
    total = sum(wants.values()) + withheld
    if total <= free:
        return dict(wants)
    grants = {crawler_id: free * want // total for crawler_id, want in wants.items()}
    remainder = free - sum(grants.values()) - free * withheld // total
    by_fraction = sorted(wants, key=lambda c: (-(free * wants[c] % total), c))
    for crawler_id in by_fraction[:remainder]:
        grants[crawler_id] += 1
    return grants
