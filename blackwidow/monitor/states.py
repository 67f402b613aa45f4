"""Crawler states, derived each cycle from the configuration and what nodes report. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CrawlerFacts:
    enabled: bool
    failed: bool  # a node rejected its spec; stays failed until the crawler is changed
    item_limit: int | None
    items_collected: int
    user_exhausted: bool
    running: bool  # a node reported it, or acknowledged its push, this cycle
    failing: bool = False  # its node says its data source gets nothing (every feed fails)
    closed: bool = False  # its schedule's window is closed: it waits for the next one


RUNNABLE_STATES = ("pending", "running", "failing")
CRAWLER_STATES = (*RUNNABLE_STATES, "scheduled", "disabled", "failed", "limit_reached")


def runnable(facts: CrawlerFacts) -> bool:
    """Whether the crawler should be on a node at all."""
    return state_of(facts) in RUNNABLE_STATES


def state_of(facts: CrawlerFacts) -> str:
    if not facts.enabled:
        return "disabled"
    if facts.failed:
        return "failed"
    limit = facts.item_limit
    if (limit is not None and facts.items_collected >= limit) or facts.user_exhausted:
        return "limit_reached"
    if facts.closed:
        return "scheduled"
    if not facts.running:
        return "pending"
    return "failing" if facts.failing else "running"
