"""Whether and where a crawler is placed: each row a situation and the decision, time passed
in (the hub's clock for lost nodes' leases, epoch seconds for crawl windows)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from blackwidow.monitor.memory.crawlers import Tracked
from blackwidow.monitor.placement_rules import (
    Off,
    PassFacts,
    Place,
    Route,
    Wait,
    Why,
    looks_again,
    push_waits,
    some_node_takes,
    where,
    whether,
)

BUDGETED, FREE = 1, 2  # user ids: one with a budget, one without
NOW = 100.0  # the hub's clock
WINDOW = {"cron": "0 9 * * *", "for": 3600}  # 09:00 to 10:00 UTC
OPEN_WINDOW = {"cron": "0 7 * * *", "for": 7200}  # 07:00 to 09:00 UTC
NOW_AT = datetime(2026, 1, 5, 8, 0, tzinfo=UTC).timestamp()  # the one closed, the other open
LOST = 105.0  # until then a lost node may store under its leases
HELD = Wait(Why.HELD, LOST)
PASS = PassFacts(live=True, limited={BUDGETED}, spent=set(), now=NOW, now_at=NOW_AT)


def crawler(user_id: int = FREE, **changes: Any) -> Tracked:
    config = ("uuid-1", user_id, "rss", {}, None, None, True, "normal")
    return replace(Tracked(1, *config, "pending", 5, 5, 5, 1.0, None), **changes)


def case(
    name: str, situation: Tracked | None, decision: Any, placed_on: int | None = None, **known: Any
) -> Any:
    """One row: a crawler placed on `placed_on` (None: nowhere), in a pass that knows `known`."""
    return pytest.param(situation, placed_on, replace(PASS, **known), decision, id=name)


@pytest.mark.parametrize(
    ("situation", "placed_on", "known", "decision"),
    [
        case("deleted", None, Off("deleted")),
        case("disabled", crawler(enabled=False), Off("disabled"), 3),
        case("failed", crawler(state="failed"), Off("failed")),
        case("its own limit reached", crawler(item_limit=5), Off("limit_reached"), 3),
        case("budget spent", crawler(BUDGETED), Off("limit_reached"), 3, spent={BUDGETED}),
        case("its window closed", crawler(schedule=WINDOW), Off("scheduled"), 3),
        case("held under its user's budget", crawler(BUDGETED, lost_until=LOST), HELD),
        case("held under its own limit", crawler(item_limit=40, lost_until=LOST), HELD),
        case("held comes first", crawler(BUDGETED, enabled=False, lost_until=LOST), HELD),
        case("held, no node live", crawler(BUDGETED, lost_until=LOST), HELD, live=False),
        case("the lost node's lease lapsed", crawler(BUDGETED, lost_until=NOW), Route()),
        case("unbounded: never held", crawler(FREE, lost_until=LOST), Route()),
        case("no node live", crawler(), Wait(Why.NO_NODE), live=False),
        case("placed, no node live", crawler(), Wait(Why.NO_NODE), 3, live=False),
        case("off before waiting", crawler(enabled=False), Off("disabled"), live=False),
        case("placed, its budget not spent: stays", crawler(BUDGETED), Place(3), 3),
        case("below its own limit: stays", crawler(item_limit=6), Place(3), 3),
        case("its window open: stays", crawler(schedule=OPEN_WINDOW), Place(3), 3),
        case("placed nowhere: routed", crawler(), Route()),
    ],
)
def test_whether(situation, placed_on, known, decision):
    assert whether(situation, placed_on, known) == decision


@pytest.mark.parametrize(
    ("chosen", "decision"),
    [
        pytest.param(4, Place(4), id="routing chose a node"),
        pytest.param(None, Wait(Why.NO_ROOM), id="weighted: no node with room"),
    ],
)
def test_where(chosen, decision):
    assert where(chosen) == decision


@pytest.mark.parametrize(
    ("strategy", "live", "room", "takes"),
    [
        pytest.param("modulo", (), {}, False, id="no node live"),
        pytest.param("modulo", (1,), {}, True, id="a node live"),
        pytest.param("rendezvous", (1, 2), {1: 0}, True, id="room is weighted routing's alone"),
        pytest.param("weighted", (), {}, False, id="weighted, no node live"),
        pytest.param("weighted", (1, 2), {1: 0, 2: -1}, False, id="weighted, full and over"),
        pytest.param("weighted", (1, 2), {1: 0, 2: 1}, True, id="weighted, a node with room"),
    ],
)
def test_some_node_takes(strategy, live, room, takes):
    assert some_node_takes(strategy, live, room) is takes


@pytest.mark.parametrize(
    ("why", "takes", "again"),
    [
        pytest.param(Why.HELD, False, True, id="held: every pass"),
        pytest.param(Why.HELD, True, True, id="held, a node takes"),
        pytest.param(Why.NO_NODE, False, False, id="no node, none takes"),
        pytest.param(Why.NO_NODE, True, True, id="no node, one takes now"),
        pytest.param(Why.NO_ROOM, False, False, id="no room, none takes"),
        pytest.param(Why.NO_ROOM, True, True, id="no room, one has room now"),
    ],
)
def test_looks_again(why, takes, again):
    assert looks_again(Wait(why), takes) is again


@pytest.mark.parametrize(
    ("removal_unanswered", "budgeted", "waits"),
    [
        pytest.param(True, True, True, id="budgeted, its removal unanswered"),
        pytest.param(True, False, False, id="no budget"),
        pytest.param(False, True, False, id="its removal answered"),
        pytest.param(False, False, False, id="neither"),
    ],
)
def test_push_waits(removal_unanswered, budgeted, waits):
    assert push_waits(removal_unanswered, budgeted) is waits
