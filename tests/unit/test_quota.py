"""Quota leases: table-driven plans, and simulated rounds that never overshoot a user's budget."""

import random

import pytest

from blackwidow.monitor.quota import (
    LeaseView,
    ShardBudget,
    exhausted,
    plan_leases,
    waits_for_budget,
)


def view(
    crawler_id: int,
    count: int = 0,
    lease: int = 0,
    rate: float = 0.0,
    item_limit: int | None = None,
    running: bool = True,
) -> LeaseView:
    return LeaseView(crawler_id, count, lease, rate, item_limit, running)


def held(crawlers: list[LeaseView], plan: dict[int, int]) -> int:
    return sum(max(plan.get(c.crawler_id, c.lease), c.count) for c in crawlers)


# (user_limit, crawlers, horizon, min_grant, expected plan)
CASES = {
    "two fast crawlers split a budget": (
        100,
        [view(1, rate=10.0), view(2, rate=10.0)],
        10.0,
        1,
        {1: 50, 2: 50},
    ),
    "the remainder goes one by one in crawler-id order": (
        5,
        [view(3, rate=1.0), view(1, rate=1.0), view(2, rate=1.0)],
        10.0,
        1,
        {1: 2, 2: 2, 3: 1},
    ),
    "a split is in proportion to the rates": (
        200,
        [view(1, rate=1.0), view(2, rate=3.0)],
        100.0,
        1,
        {1: 50, 2: 150},
    ),
    "a split is in proportion to what is wanted beyond headroom": (
        125,  # held 40, free 85; wants 100 - 30 = 70 and 100: grants 35 and 50
        [view(1, count=10, lease=40, rate=5.0), view(2, count=0, lease=0, rate=5.0)],
        20.0,
        1,
        {1: 40 + 35, 2: 50},
    ),
    "a budget that covers every want grants them fully": (
        1000,
        [view(1, rate=1.0), view(2, rate=2.0)],
        10.0,
        1,
        {1: 10, 2: 20},
    ),
    "an idle crawler still gets min_grant": (1000, [view(1)], 10.0, 5, {1: 5}),
    "headroom covering the need asks for nothing": (
        1000,
        [view(1, count=10, lease=30, rate=1.0)],
        10.0,
        1,
        {},
    ),
    "a crawler's own item_limit caps its lease": (
        1000,
        [view(1, count=90, lease=90, rate=10.0, item_limit=100)],
        10.0,
        1,
        {1: 100},
    ),
    "a crawler at its item_limit shrinks to its count": (
        1000,
        [view(1, count=100, lease=110, rate=10.0, item_limit=100)],
        10.0,
        1,
        {1: 100},
    ),
    "a stopped crawler shrinks to its count": (
        1000,
        [view(1, count=30, lease=80, rate=5.0, running=False)],
        10.0,
        1,
        {1: 30},
    ),
    "a stopped crawler already at its count is left alone": (
        1000,
        [view(1, count=30, lease=30, running=False)],
        10.0,
        1,
        {},
    ),
    "a hoarding idle crawler shrinks to count + need": (
        1000,
        [view(1, count=40, lease=500)],
        10.0,
        10,
        {1: 50},
    ),
    "headroom up to twice the need is kept": (
        1000,
        [view(1, count=40, lease=60)],
        10.0,
        10,
        {},
    ),
    "budget freed by a shrink is not granted in the same call": (
        100,
        [view(1, count=0, lease=100, running=False), view(2, rate=10.0)],
        10.0,
        1,
        {1: 0},
    ),
    "no free budget, no grants": (
        100,
        [view(1, count=50, lease=100, rate=50.0)],
        10.0,
        1,
        {},
    ),
    "over budget after the user limit was lowered: no grants": (
        50,
        [view(1, count=40, lease=45, rate=1.0), view(2, count=20, lease=20, rate=1.0)],
        10.0,
        1,
        {},
    ),
    "a count ahead of the ledger counts as held budget": (
        100,  # held 60, free 40; wants 10 and 100: floors 3 and 36, remainder 1 to crawler 1
        [view(1, count=60, lease=50, rate=1.0), view(2, rate=10.0)],
        10.0,
        1,
        {1: 64, 2: 36},
    ),
    "a starved budget takes back an idle crawler's unused lease": (
        70,  # free 0; crawler 1 wants more, crawler 2 has stored nothing of its 10
        [view(1, count=60, lease=60, rate=10.0), view(2, count=0, lease=10)],
        10.0,
        10,
        {2: 0},
    ),
    "an idle crawler keeps its lease while the budget covers every want": (
        100,
        [view(1, count=60, lease=60, rate=1.0), view(2, count=0, lease=10)],
        10.0,
        10,
        {1: 70},
    ),
    "a last item goes where it is wanted most, not to the lowest id": (
        61,  # free 1; wants 10 and 100: both floor to 0, crawler 2's fraction is the larger
        [view(1, count=0, lease=0, rate=1.0), view(2, count=60, lease=60, rate=10.0)],
        10.0,
        1,
        {2: 61},
    ),
}


@pytest.mark.parametrize(
    ("user_limit", "crawlers", "horizon", "min_grant", "expected"), CASES.values(), ids=CASES.keys()
)
def test_plan_leases(user_limit, crawlers, horizon, min_grant, expected):
    plan = plan_leases(user_limit, crawlers, horizon, min_grant)
    assert plan == expected
    leases = {c.crawler_id: c.lease for c in crawlers}
    assert all(new != leases[crawler_id] for crawler_id, new in plan.items())
    assert held(crawlers, plan) <= max(user_limit, held(crawlers, {}))


@pytest.mark.parametrize(("horizon", "min_grant"), [(-1.0, 1), (10.0, -1)])
def test_negative_horizon_or_min_grant_is_an_error(horizon, min_grant):
    with pytest.raises(ValueError):
        plan_leases(100, [view(1)], horizon, min_grant)


@pytest.mark.parametrize(
    ("user_limit", "counts", "expected"),
    [(10, [3, 7], True), (10, [3, 6], False), (10, [11], True), (10, [], False), (0, [], True)],
)
def test_exhausted(user_limit, counts, expected):
    assert exhausted(user_limit, counts) is expected


def simulate(rng: random.Random, max_rounds: int = 2000) -> tuple[int, int, int]:
    """Plan, push, let nodes store, confirm shrinks; check the ledger invariant every step."""
    user_limit = rng.randint(1, 3000)
    ids = rng.sample(range(1, 100), rng.randint(1, 6))
    count = dict.fromkeys(ids, 0)
    lease = dict.fromkeys(ids, 0)
    horizon, min_grant = rng.uniform(0.5, 10.0), rng.randint(1, 5)
    for rounds in range(1, max_rounds + 1):
        running = {i: rng.random() < 0.85 for i in ids}
        views = [view(i, count[i], lease[i], rng.uniform(0.0, 40.0), None, running[i]) for i in ids]
        plan = plan_leases(user_limit, views, horizon, min_grant)
        grants = {i: new for i, new in plan.items() if new > lease[i]}
        shrinks = {i: new for i, new in plan.items() if new < lease[i]}
        assert set(grants) | set(shrinks) == set(plan)
        assert all(running[i] for i in grants)
        lease.update(grants)  # the ledger records a grant before the node may use it
        assert sum(max(lease[i], count[i]) for i in ids) <= user_limit
        for i in ids:  # nodes store up to the lease they hold (a pending shrink not yet seen)
            if running[i]:
                count[i] += rng.randint(0, lease[i] - count[i])
        for i, new in shrinks.items():  # the node confirms max(new lease, its count)
            lease[i] = max(new, count[i])
        assert sum(max(lease[i], count[i]) for i in ids) <= user_limit
        if exhausted(user_limit, count.values()):
            return rounds, sum(count.values()), user_limit
    pytest.fail(f"budget {user_limit} not used up in {max_rounds} rounds: {count}")


def test_random_rounds_never_overshoot_and_use_the_whole_budget():
    rng = random.Random(20240521)
    for _ in range(200):
        rounds, stored, user_limit = simulate(rng)
        assert stored == user_limit, rounds


def test_a_want_in_another_shard_takes_its_share_and_idle_leases_go_back():
    """Free budget is shared with what other shards want, and their share stays free; when
    the free budget cannot cover it, an idle crawler's unused lease goes back."""
    busy = view(1, count=0, lease=0, rate=1.0)
    assert plan_leases(20, [busy], 10.0, 10, wanted_elsewhere=30) == {1: 5}
    assert plan_leases(1, [busy], 10.0, 10, wanted_elsewhere=40) == {1: 1}  # the last item
    idle = view(2, count=20, lease=25, rate=0.0)
    assert plan_leases(25, [idle], 10.0, 5) == {}  # its headroom covers what it needs
    assert plan_leases(25, [idle], 10.0, 5, wanted_elsewhere=10) == {2: 20}


TWO_SHARDS = {  # crawler id -> (shard, stored, lease, items its feed still has)
    "one shard leased the whole budget to a crawler whose feed has nothing more": {
        5: ("b", 20, 25, 0),
        **{i: ("a", 0, 0, 20) for i in (1, 2, 3, 4, 6)},
    },
    "one item left, starved crawlers in both shards": {
        4: ("b", 13, 13, 7),
        6: ("b", 11, 11, 9),
        **{i: ("a", 0, 0, 20) for i in (1, 2, 3, 5)},
    },
}


@pytest.mark.parametrize("crawlers", TWO_SHARDS.values(), ids=TWO_SHARDS.keys())
def test_two_shards_use_a_whole_budget(crawlers):
    """Planning each shard in turn from what the other holds (as SQL tells each leader), a
    budget of 25 is used up and never overshot."""
    limit, min_grant = 25, 10
    shard_of = {i: c[0] for i, c in crawlers.items()}
    count = {i: c[1] for i, c in crawlers.items()}
    lease = {i: c[2] for i, c in crawlers.items()}
    available = {i: c[3] for i, c in crawlers.items()}
    for _ in range(20):
        for shard in ("a", "b"):
            others = [i for i in shard_of if shard_of[i] != shard]
            budget = ShardBudget(
                limit,
                held_elsewhere=sum(max(lease[i], count[i]) for i in others),
                stored_elsewhere=sum(count[i] for i in others),
                starved_elsewhere=sum(lease[i] <= count[i] and available[i] > 0 for i in others),
            )
            mine = [i for i in shard_of if shard_of[i] == shard]
            rate = {i: 1.0 if available[i] else 0.05 for i in mine}  # 0.05: a decaying rate
            views = [view(i, count[i], lease[i], rate[i]) for i in mine]
            plan = plan_leases(
                budget.share, views, 10.0, min_grant, budget.starved_elsewhere * min_grant
            )
            lease.update(plan)  # grants recorded, shrinks confirmed by the nodes at once
            assert sum(max(lease[i], count[i]) for i in shard_of) <= limit
            for i in mine:  # the nodes store what their feeds have, up to the lease
                stored = min(available[i], max(lease[i] - count[i], 0))
                count[i] += stored
                available[i] -= stored
        if exhausted(limit, count.values()):
            break
    assert sum(count.values()) == limit


def test_a_lone_idle_crawler_s_lease_holds_steady() -> None:
    """Budget 4, one crawler that stored 3 and expects nothing more: it keeps its last item's
    lease, rather than giving it back for its own want and being granted it again."""
    granted = plan_leases(4, [LeaseView(1, 3, 3, 0.0, None, True)], 6.0, 10)
    assert granted == {1: 4}
    assert plan_leases(4, [LeaseView(1, 3, 4, 0.0, None, True)], 6.0, 10) == {}


def test_an_idle_crawler_gets_only_what_busy_ones_leave() -> None:
    busy, idle = LeaseView(1, 0, 0, 5.0, None, True), LeaseView(2, 0, 0, 0.0, None, True)
    assert plan_leases(12, [busy, idle], 2.0, 10) == {1: 10, 2: 2}


def test_a_crawler_waits_for_budget_when_running_without_room_below_its_limit() -> None:
    assert waits_for_budget(LeaseView(1, 5, 5, 3.0, None, True))
    assert waits_for_budget(LeaseView(1, 5, 5, 0.0, None, True))  # its rate decayed waiting
    assert not waits_for_budget(LeaseView(1, 5, 8, 3.0, None, True))  # room left
    assert not waits_for_budget(LeaseView(1, 5, 5, 3.0, 5, True))  # at its own limit
    assert not waits_for_budget(LeaseView(1, 5, 5, 3.0, None, False))  # not running


def test_two_shards_whose_waiting_crawlers_rates_decayed_still_grant_the_free_budget() -> None:
    """Each shard's crawlers used their leases and wait; their rates fell while they could
    not store. Holding the free budget back for the other shard's crawlers, which that shard
    treats as idle, left it to nobody: the user's budget stalled at 5 of 25."""
    horizon, min_grant, limit = 2.0, 10, 25
    shards = [
        [LeaseView(c, 1, 1, 0.0, None, True) for c in (1, 2, 3)],
        [LeaseView(c, 1, 1, 0.0, None, True) for c in (4, 5)],
    ]
    for mine, theirs in (shards, shards[::-1]):
        held_elsewhere = sum(max(view.lease, view.count) for view in theirs)
        wanted_elsewhere = min_grant * sum(waits_for_budget(view) for view in theirs)
        plan = plan_leases(limit - held_elsewhere, mine, horizon, min_grant, wanted_elsewhere)
        assert any(plan.get(view.crawler_id, view.lease) > view.lease for view in mine)


def test_an_idle_crawler_holding_the_budget_gives_back_what_another_shard_waits_for() -> None:
    """One shard's crawler took the whole budget and stored all its feed had; the other
    shard's crawlers never stored anything, so their rates are zero. Its unused lease must go
    back, or they wait for ever: the user's budget stalled at 20 of 25."""
    hoarder = LeaseView(5, 20, 25, 0.0, None, True)
    waiting = [LeaseView(c, 0, 0, 0.0, None, True) for c in (1, 2, 3, 4, 6)]
    wanted_elsewhere = 10 * sum(waits_for_budget(view) for view in waiting)
    assert plan_leases(25, [hoarder], 2.0, 10, wanted_elsewhere) == {5: 20}
