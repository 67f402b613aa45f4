"""The reconcile half of a monitor cycle (docs/architecture.md "How a crawler runs", step 3):
take crawler changes, route, lease, push the difference in batches, record. Costs what
changed, not what exists.

It looks only at `dirty` crawlers: changed by an analyst, reported differently by a node,
on a node that came or went, holding a lease that moves, or not yet where they should be.
A crawler leaves the dirty set once it runs where routing wants it with the wanted spec, or
runs nowhere when it should not run. The decisions are the pure modules' (placement_rules:
whether and where; routing, quota, states); SQL is read and written in bulk, and never while
the memory's lock is held.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from blackwidow import changes
from blackwidow.alerts import events
from blackwidow.alerts.events import Emitter, Event
from blackwidow.core.node_protocol import Shard
from blackwidow.monitor import quota_grants
from blackwidow.monitor.change_intake import Intake
from blackwidow.monitor.desired import facts, spec
from blackwidow.monitor.execute import Outcome, execute
from blackwidow.monitor.figures import MonitorFigures
from blackwidow.monitor.memory.crawlers import Tracked, elsewhere, save_assignments, write
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.placement import Placement
from blackwidow.monitor.placement_rules import (
    Decision,
    Off,
    PassFacts,
    Place,
    Route,
    Wait,
    some_node_takes,
    where,
    whether,
)
from blackwidow.monitor.quota import ShardBudget
from blackwidow.monitor.reload import Plan, plan_reload
from blackwidow.monitor.routing import Router
from blackwidow.monitor.states import state_of
from blackwidow.monitor.turns import Turns, in_parts, record_in_turns
from blackwidow.node_client import NodeClient, NodeTarget


def _schedule(crawler: Tracked | None) -> dict[str, Any] | None:
    return None if crawler is None else crawler.schedule


class Reconciler:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        client: NodeClient,
        memory: ShardMemory,
        router: Router,
        lease_horizon: float,
        shard: Shard,
        leading: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,  # epoch seconds, for crawl windows
        figures: MonitorFigures | None = None,
        *,
        fence: Callable[[Session], None] = lambda session: None,
        alerts: Emitter,
        turns: Turns | None = None,
    ) -> None:
        self._sessions = sessions
        self._turns = turns or Turns()  # the lock keeper's renewals go first
        self._clock = clock
        self._wall = wall
        self._now_at = wall()  # this pass's instant: windows are judged against it
        self._figures = figures or MonitorFigures()
        self._client = client
        self._memory = memory
        self._router = router
        self._lease_horizon = lease_horizon
        self._shard = shard
        self._leading = leading  # False once the lock is lost: nothing more is pushed
        self._fence = fence  # raises unless the lock is still ours: last in each transaction
        # runnable crawler -> the node routing chose; on no node -> why it waits
        self._placement = Placement()
        self._intake = Intake(memory, shard)
        self._budget: dict[int, ShardBudget] = {}  # this pass: user id -> its budget here
        self._first_take = True
        self._alerts = alerts
        self._failed: list[Event] = []  # this pass: crawler.failed, emitted as it is recorded

    def reconcile_once(self, targets: dict[int, NodeTarget]) -> None:
        """One pass: plan, push the plan, record what the nodes acknowledged. A pass that
        fails part way leaves the memory ahead of SQL (dirty crawlers taken, states settled),
        so the next one reads everything again."""
        try:
            plan, taken = self.plan()
            outcome = Outcome()
            if self._leading():
                outcome = execute(
                    plan, targets, self._client, self._figures, self._leading, self._budgeted
                )
            rows, placed, unplaced = self._settle(outcome)
            self._record(rows, placed, unplaced, taken)
        except Exception:
            with self._memory.lock:
                self._memory.loaded = False
            raise
        finally:
            self._failed = []

    def _record(
        self,
        rows: dict[int, dict[str, Any]],
        placed: dict[int, tuple[int, str]],
        unplaced: set[int],
        taken: list[int],
    ) -> None:
        """The pass's crawler rows and assignments, a part at a time (blackwidow.monitor.turns);
        the changes it took are forgotten with the last part, so a pass cut short is taken
        again, and its memory read afresh."""
        parts = in_parts({*rows, *placed, *unplaced})

        def part(ids: list[int], last: bool) -> Callable[[Session], None]:
            def run(session: Session) -> None:
                write(session, {c: rows[c] for c in ids if c in rows})
                save_assignments(
                    session, {c: placed[c] for c in ids if c in placed}, unplaced.intersection(ids)
                )
                if last:
                    changes.taken(session, taken)
                    self._alerts.emit(session, self._failed)

            return run

        record_in_turns(
            self._sessions,
            self._turns,
            (part(ids, n == len(parts) - 1) for n, ids in enumerate(parts)),
            self._fence,
        )

    def plan(self) -> tuple[Plan, list[int]]:
        """Take crawler changes and decide what to push and remove; the plan, and the ids of
        the changes it took (forgotten once the pass is recorded). Lease grants are written
        before this returns, so the ledger knows a grant before any node does."""
        self._now_at = now_at = self._wall()
        with self._sessions.begin() as session:
            taken, everything = self._intake.take(session, now_at)
        if everything:
            self._placement.clear()  # every crawler is routed afresh
            if self._first_take:
                memory = self._memory
                with memory.lock:
                    quota_grants.hold_unseen(memory, self._clock())
                self._first_take = False
        else:
            for crawler_id in self._intake.replaced:  # its key may have changed: route again
                self._placement.pop(crawler_id)
        with self._sessions.begin() as session:
            budgets = self._budgets(session)
            plan, grants = self._decide(budgets)
            write(session, grants)
            self._fence(session)
        self._figures.count("lease_grants", len(grants))
        return plan, taken

    def _budgets(self, session: Session) -> dict[int, ShardBudget]:
        """user id -> the user's budget as this shard sees it, for every user with one.

        One shard holds the whole budget. With several, a user's crawlers may sit in other
        shards too: the users' rows are locked (so shard leaders decide one at a time) and
        what the other shards hold is subtracted, so the sum of leases never passes a limit.
        """
        memory = self._memory
        with memory.lock:
            limits = {u: limit for u, limit in memory.limits.items() if self._intake.by_user.get(u)}
        if self._shard.count == 1 or not limits:
            return {u: ShardBudget(limit) for u, limit in limits.items()}
        return elsewhere(session, limits, self._shard)

    def _decide(self, budgets: dict[int, ShardBudget]) -> tuple[Plan, dict[int, dict[str, Any]]]:
        """Route, lease and diff the dirty crawlers; the plan and the lease grants to record."""
        memory = self._memory
        with memory.lock:
            dirty = memory.dirty
            memory.dirty = set()
            crawlers = memory.crawlers  # and those whose window opened or closed meanwhile
            dirty.update(memory.windows.due(self._now_at, lambda c: _schedule(crawlers.get(c))))
            self._budget = budgets
            # a budget is shared and leases follow rates: every pass looks again at every
            # crawler of a user with a budget (only those users cost more than their changes)
            for user_id in budgets:
                dirty.update(self._intake.by_user.get(user_id, ()))
            self._route(memory.live, dirty)
            lease_of, grants = self._lease(dirty)
            self._build_specs(dirty, lease_of)
            self._dirty = dirty
            return self._diff(dirty), grants

    def _route(self, live: tuple[int, ...], dirty: set[int]) -> None:
        """Place the dirty crawlers as placement_rules decides, with the waiting ones it looks
        at again, and every crawler when the node set changed. Weighted routing learns each
        node's room first (Placement.room, a step per node)."""
        crawlers, strategy = self._memory.crawlers, self._router.strategy
        capacity = {n: self._memory.capacity.get(n, 1) for n in live}
        if strategy == "weighted":
            self._router.room = self._placement.room(capacity, self._memory.data_sources)
        dirty |= self._placement.waiting_again(some_node_takes(strategy, live, self._router.room))
        if not self._router.routes_over(live, capacity):
            moved = self._router.rebuild(live, dict(self._placement.items()), capacity)
            self._figures.count("hard_reloads")
            for crawler_id, node_id in moved.items():
                self._apply(crawler_id, where(node_id))
            dirty |= set(moved)
            if not live:
                dirty |= set(self._placement)  # none stays where it is (whether)
        exhausted = quota_grants.exhausted_users(self._budget, self._owned_of(dirty))
        known = PassFacts(bool(live), self._budget, exhausted, self._clock(), self._now_at)
        unplaced = []
        for crawler_id in dirty:
            decision = whether(crawlers.get(crawler_id), self._placement.get(crawler_id), known)
            if isinstance(decision, Route):
                unplaced.append(crawler_id)
            else:
                self._apply(crawler_id, decision)
        if unplaced:
            self._route_unplaced(unplaced, live)

    def _route_unplaced(self, unplaced: list[int], live: tuple[int, ...]) -> None:
        """Routing's choice for the runnable crawlers placed nowhere, in one call."""
        crawlers = self._memory.crawlers
        keys = [crawlers[c].uuid for c in unplaced]
        on = {}
        if self._router.strategy == "weighted":  # only it may route a key off its node
            pairs = [(c, crawlers[c].uuid) for c in unplaced]
            on = self._placement.running_on(pairs, self._memory.reported.places, set(live))
        chosen = self._router.route_many(keys, on)
        for crawler_id, node_id in zip(unplaced, chosen, strict=True):
            self._apply(crawler_id, where(node_id))

    def _apply(self, crawler_id: int, decision: Decision) -> None:
        """Carry one decision out on the placement (a crawler staying where it is, as is)."""
        match decision:
            case Place(node_id) if self._placement.get(crawler_id) != node_id:
                self._placement.put(crawler_id, self._memory.crawlers[crawler_id].uuid, node_id)
            case Wait():
                self._placement.set_aside(crawler_id, decision)
            case Off():
                self._placement.set_aside(crawler_id, None)

    def _budgeted(self, crawler_id: int) -> bool:
        crawler = self._memory.crawlers.get(crawler_id)
        return crawler is not None and crawler.user_id in self._budget

    def _owned_of(self, crawler_ids: set[int]) -> dict[int, list[Tracked]]:
        """The crawlers of every user with a budget who owns one of these."""
        crawlers, limits = self._memory.crawlers, self._memory.limits
        users = {crawlers[c].user_id for c in crawler_ids if c in crawlers} & set(limits)
        return {u: [crawlers[c] for c in self._intake.by_user.get(u, ())] for u in users}

    def _lease(self, dirty: set[int]) -> tuple[dict[int, int], dict[int, dict[str, Any]]]:
        """Plan the leases of users whose crawlers changed: the lease to push per crawler, and
        the grants to record before pushing. A crawler whose lease moves becomes dirty."""
        lease_of: dict[int, int] = {}
        grants: dict[int, dict[str, Any]] = {}
        for user_id, owned in self._owned_of(dirty).items():
            before = {c.id: c.lease for c in owned}
            pushed = quota_grants.plan(
                self._budget[user_id], owned, self._placement, self._lease_horizon
            )
            lease_of.update(pushed)
            for crawler in owned:
                if crawler.lease != before[crawler.id]:
                    grants[crawler.id] = {"lease": crawler.lease}
                if crawler.spec is None or crawler.spec.lease != pushed[crawler.id]:
                    dirty.add(crawler.id)
        return lease_of, grants

    def _build_specs(self, dirty: set[int], lease_of: dict[int, int]) -> None:
        """A spec (and its digest, computed once) for each placed dirty crawler whose
        configuration or lease changed."""
        crawlers = self._memory.crawlers
        for crawler_id in dirty:
            crawler = crawlers.get(crawler_id)
            if crawler is None or crawler_id not in self._placement:
                continue
            lease = lease_of.get(crawler_id)  # every budgeted user's crawlers were planned
            if crawler.spec is None or crawler.spec.lease != lease:
                crawler.spec = spec(crawler, lease, self._intake.secrets.get(crawler_id))
                crawler.digest = crawler.spec.digest()

    def _diff(self, dirty: set[int]) -> Plan:
        crawlers, reported = self._memory.crawlers, self._memory.reported
        desired = {
            c: (node_id, crawlers[c].spec)
            for c in dirty
            if (node_id := self._placement.get(c)) is not None and crawlers[c].spec is not None
        }
        return plan_reload(dirty, desired, reported.places, reported.answered)

    # -- record ----------------------------------------------------------------------------

    def _settle(
        self, outcome: Outcome
    ) -> tuple[dict[int, dict[str, Any]], dict[int, tuple[int, str]], set[int]]:
        """Apply the outcome; crawler rows to write, assignments placed and gone."""
        memory = self._memory
        rows: dict[int, dict[str, Any]] = {}
        placed: dict[int, tuple[int, str]] = {}
        unplaced: set[int] = set()
        with memory.lock:
            reported, crawlers = memory.reported, memory.crawlers
            for node_id, ids in outcome.removed.items():
                reported.removed(node_id, ids)
            for crawler_id, (node_id, _status) in outcome.acked.items():
                crawler = crawlers.get(crawler_id)
                if crawler is not None and crawler.digest is not None:
                    reported.acked(node_id, crawler_id, crawler.digest)
            exhausted = quota_grants.exhausted_users(self._budget, self._owned_of(self._dirty))
            for crawler_id in self._dirty:
                crawler = crawlers.get(crawler_id)
                if crawler is None:
                    unplaced.add(crawler_id)
                    continue
                node_id, row = self._settle_one(crawler, outcome, exhausted)
                if row:
                    rows[crawler_id] = row
                if node_id is not None and self._intake.recorded.get(crawler_id) != node_id:
                    placed[crawler_id] = (node_id, crawler.digest or "")
                    self._intake.recorded[crawler_id] = node_id
                elif node_id is None and crawler_id in self._intake.recorded:
                    unplaced.add(crawler_id)
                    del self._intake.recorded[crawler_id]
            for crawler_id in unplaced:
                self._intake.recorded.pop(crawler_id, None)
        return rows, placed, unplaced

    def _settle_one(
        self, crawler: Tracked, outcome: Outcome, exhausted: set[int]
    ) -> tuple[int | None, dict[str, Any]]:
        """One crawler's state after this pass: the node it runs on (None: nowhere it
        should), and its changed columns. One that is not settled stays dirty."""
        before = (crawler.state, crawler.lease, crawler.last_error, crawler.items_collected)
        reported = self._memory.reported
        node_id = self._placement.get(crawler.id)
        places = reported.places(crawler.id)
        running = node_id is not None and places.get(node_id) == crawler.digest
        if crawler.id in outcome.unsure:
            quota_grants.hold_unanswered(
                crawler, self._budget, self._memory.lease_after, self._clock()
            )
        if crawler.id in outcome.acked:
            quota_grants.confirm(crawler, outcome.acked[crawler.id][1])
        else:
            if crawler.id in outcome.final_counts:  # removed, and running nowhere else yet
                crawler.items_collected = outcome.final_counts[crawler.id]
            if not places and crawler.lost_until is None:  # a lost node's count is unsure
                quota_grants.release(crawler)
        if crawler.id in outcome.rejected:
            if crawler.state != "failed":
                error = outcome.rejected[crawler.id]
                self._failed.append(events.crawler_failed(crawler.id, crawler.user_id, error))
            crawler.state, crawler.last_error = "failed", outcome.rejected[crawler.id]
        else:
            crawler.state = state_of(
                facts(crawler, crawler.user_id in exhausted, running, self._now_at)
            )
        unsettled = (node_id is not None and not running) or any(p != node_id for p in places)
        if unsettled and crawler.state != "failed":
            self._memory.dirty.add(crawler.id)
        after = (crawler.state, crawler.lease, crawler.last_error, crawler.items_collected)
        columns = ("state", "lease", "last_error", "items_collected")
        changed = dict(zip(columns, after, strict=True))
        return (node_id if running else None), ({} if before == after else changed)
