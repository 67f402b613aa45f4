"""Whether and where a reconcile pass places a crawler, each rule stated once. Pure.

(docs/architecture.md "How a crawler runs", step 3; "Room"; "Exact limits".) A crawler that
should not run goes nowhere, and its state says why; one that a lost node may still store
waits until that node cannot; a runnable one stays where it is placed, or routing chooses its
node; one that no node can take waits, remembered, until some node can. The reconciler
gathers the facts and carries the decisions out; routing (blackwidow.monitor.routing) knows
how to choose a node, not whether a crawler needs one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import Enum

from blackwidow.monitor.desired import facts
from blackwidow.monitor.memory.crawlers import Tracked
from blackwidow.monitor.quota_grants import held_by_lost_node
from blackwidow.monitor.states import runnable, state_of


class Why(Enum):
    """Why a crawler that should run is on no node; it says when it is looked at again."""

    NO_NODE = "no node"  # no node is live
    NO_ROOM = "no room"  # weighted routing: no live node has room for another data source
    HELD = "held by a lost node"  # a lost node may still store under the crawler's lease


@dataclass(frozen=True)
class Place:
    """Run on this node: the one it is placed on already, or routing's choice."""

    node: int


@dataclass(frozen=True)
class Route:
    """Runnable, some node is live, and placed nowhere yet: routing chooses (see `where`)."""


@dataclass(frozen=True)
class Wait:
    """On no node for now, and remembered: looked at again when `looks_again` says."""

    why: Why
    until: float | None = None  # HELD: when the lost node can store no more (the hub's clock)


@dataclass(frozen=True)
class Off:
    """Not to run, and not remembered: `state` says why (or "deleted"). Whatever makes it
    runnable again looks at it again: a change of it or its user, its window opening, and
    every pass for a user with a budget."""

    state: str


Decision = Place | Route | Wait | Off


@dataclass(frozen=True)
class PassFacts:
    """What one reconcile pass knows that holds for every crawler it places."""

    live: bool  # some node is live
    limited: Collection[int]  # the users with a budget
    spent: Collection[int]  # the users whose budget is spent (quota_grants.exhausted_users)
    now: float  # the hub's clock, against which a lost node's leases lapse
    now_at: float  # epoch seconds, against which crawl windows open and close


def whether(crawler: Tracked | None, placed_on: int | None, known: PassFacts) -> Decision:
    """Whether a dirty crawler needs a node, in order:

    1. deleted: off.
    2. held by a lost node: it waits until that node can store no more, whatever else keeps
       it off, since only time ends a hold: it is looked at every pass until then.
    3. not runnable (disabled, failed, its limit reached or its user's budget spent, its
       window closed): off, its state saying why.
    4. no node is live: it waits for one.
    5. placed: it stays (a change of the node set moves it through routing's rebuild).
    6. otherwise routing chooses.
    """
    if crawler is None:
        return Off("deleted")
    if held_by_lost_node(crawler, known.limited, known.now):
        return Wait(Why.HELD, crawler.lost_until)
    crawler_facts = facts(crawler, crawler.user_id in known.spent, False, known.now_at)
    if not runnable(crawler_facts):
        return Off(state_of(crawler_facts))
    if not known.live:
        return Wait(Why.NO_NODE)
    return Route() if placed_on is None else Place(placed_on)


def where(chosen: int | None) -> Place | Wait:
    """Routing's choice for a crawler it routed: that node, or, when weighted routing found
    none with room, a wait for room (a full node is given nothing new)."""
    return Wait(Why.NO_ROOM) if chosen is None else Place(chosen)


def some_node_takes(strategy: str, live: Collection[int], room: Mapping[int, int]) -> bool:
    """Whether a crawler waiting for a node could be placed now: any live node will do, but
    weighted routing gives nothing new to a node without room (Placement.room)."""
    if strategy == "weighted":
        return any(left > 0 for left in room.values())
    return bool(live)


def looks_again(wait: Wait, takes: bool) -> bool:
    """Whether a waiting crawler is looked at again this pass: a held one every pass, since
    its hold ends with time alone; one waiting for a node only once some node takes one
    (`some_node_takes`), so crawlers waiting while none can cost nothing."""
    return wait.why is Why.HELD or takes


def push_waits(removal_unanswered: bool, budgeted: bool) -> bool:
    """Whether a push is held back this pass: a crawler of a user with a budget whose removal
    got no answer may still run where it was, under a lease not yet lapsed."""
    return removal_unanswered and budgeted
