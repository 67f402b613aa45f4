"""Crawler states: disabled beats failed beats limit reached beats scheduled beats
failing/running/pending."""

from __future__ import annotations

import pytest

from blackwidow.monitor.states import CrawlerFacts, runnable, state_of


def facts(
    enabled: bool = True,
    failed: bool = False,
    item_limit: int | None = None,
    items_collected: int = 0,
    user_exhausted: bool = False,
    running: bool = False,
    failing: bool = False,
    closed: bool = False,
) -> CrawlerFacts:
    return CrawlerFacts(
        enabled=enabled,
        failed=failed,
        item_limit=item_limit,
        items_collected=items_collected,
        user_exhausted=user_exhausted,
        running=running,
        failing=failing,
        closed=closed,
    )


@pytest.mark.parametrize(
    ("crawler", "state", "can_run"),
    [
        # disabled wins over everything
        (facts(enabled=False), "disabled", False),
        (facts(enabled=False, running=True), "disabled", False),
        (
            facts(
                enabled=False,
                failed=True,
                item_limit=5,
                items_collected=9,
                user_exhausted=True,
                running=True,
            ),
            "disabled",
            False,
        ),
        # failed wins over the limits and over running
        (facts(failed=True), "failed", False),
        (facts(failed=True, running=True), "failed", False),
        (facts(failed=True, item_limit=5, items_collected=5, user_exhausted=True), "failed", False),
        # the crawler's own limit: reached at exactly the limit, not one before
        (facts(item_limit=5, items_collected=4), "pending", True),
        (facts(item_limit=5, items_collected=4, running=True), "running", True),
        (facts(item_limit=5, items_collected=5), "limit_reached", False),
        (facts(item_limit=5, items_collected=5, running=True), "limit_reached", False),
        (facts(item_limit=5, items_collected=6), "limit_reached", False),
        (facts(item_limit=0, items_collected=0), "limit_reached", False),
        (facts(item_limit=None, items_collected=10**9), "pending", True),
        # the user's budget is spent
        (facts(user_exhausted=True), "limit_reached", False),
        (facts(user_exhausted=True, running=True), "limit_reached", False),
        (facts(item_limit=5, items_collected=1, user_exhausted=True), "limit_reached", False),
        # otherwise it runs, or waits for a node
        (facts(running=True), "running", True),
        (facts(running=False), "pending", True),
        # running, but every feed of its data source fails: it stays on its node, and says so
        (facts(running=True, failing=True), "failing", True),
        (facts(running=False, failing=True), "pending", True),
        (
            facts(item_limit=1, items_collected=1, running=True, failing=True),
            "limit_reached",
            False,
        ),
        (facts(enabled=False, running=True, failing=True), "disabled", False),
        # outside its window it waits, off its node; the limits and disabling still win
        (facts(closed=True), "scheduled", False),
        (facts(closed=True, running=True), "scheduled", False),
        (facts(closed=True, item_limit=1, items_collected=1), "limit_reached", False),
        (facts(closed=True, enabled=False), "disabled", False),
        (facts(closed=True, failed=True), "failed", False),
    ],
)
def test_state_and_runnable(crawler, state, can_run):
    assert state_of(crawler) == state
    assert runnable(crawler) is can_run
