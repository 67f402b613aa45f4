"""The control plane's invariants (ARCHITECTURE.md), checked on a settled model cluster from
what SQL holds and what the nodes say over HTTP they run.

1. Every runnable crawler runs on exactly one live node: where routing puts it (modulo and
   rendezvous: the route of its source key over the live nodes; weighted: beside the other
   crawlers of its key, on a node with room or the one it was on).
2. Nothing runs disabled, failed, at its item limit, with its user's budget spent, or with
   its window closed; and its state says which.
3. A crawler is `pending` only when no node can take it: no node is live, or (weighted) no
   live node has room for its key.
4. SQL's assignments are what the nodes run, and only live nodes run anything.
5. No subscriber holds more items than its crawler's limit; no user's crawlers together more
   than the user's budget. Not for a limit or budget set on crawlers that had been running:
   what a node stored under the old one stays stored.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import requests
from sqlalchemy import select

from blackwidow.core.node_protocol import GENERATION_HEADER
from blackwidow.models import LIVE_NODE_STATES, Assignment, Crawler, Node, User
from blackwidow.monitor.routing import ROUTERS
from sources import timetable
from tests.component.conftest import SECRET, bearer
from tests.component.model_cluster import Cluster

PLACED_STATES = ("running", "failing")


@dataclass(frozen=True)
class Reset:
    """Limits and budgets set after their crawlers could have stored items."""

    crawlers: frozenset[int] = frozenset()
    users: frozenset[int] = frozenset()


@dataclass
class Seen:
    crawlers: dict[int, Crawler]
    limits: dict[int, int | None]  # user id -> budget
    live: dict[int, Node]  # node id -> node, live in SQL
    urls: dict[str, int]  # node URL -> node id
    assigned: dict[int, int]  # crawler id -> node id, in SQL
    runs: dict[int, list[int]]  # crawler id -> node ids running it, as the nodes say
    subscribers: dict[int, dict[str, Any]]  # crawler id -> its subscriber's status


def look(cluster: Cluster) -> Seen:
    with cluster.sessions()() as session:
        crawlers = {c.id: c for c in session.scalars(select(Crawler))}
        limits = {u.id: u.item_limit for u in session.scalars(select(User))}
        nodes = list(session.scalars(select(Node)))
        assigned = dict(session.execute(select(Assignment.crawler_id, Assignment.node_id)).all())
        session.expunge_all()
    live = {n.id: n for n in nodes if n.state in LIVE_NODE_STATES}
    urls = {n.url: n.id for n in nodes}
    runs: dict[int, list[int]] = defaultdict(list)
    subscribers: dict[int, dict[str, Any]] = {}
    for node in cluster.nodes:
        if not node.up:
            continue
        health = requests.get(f"{node.url}/healthz", timeout=5).json()
        if health["generation"] is None:  # detached, registering again: it runs nothing
            assert not health["crawlers"], health
            continue
        headers = {**bearer(SECRET), GENERATION_HEADER: str(health["generation"])}
        for crawler_id in health["crawlers"]:
            runs[crawler_id].append(urls.get(node.url, -1))
            answer = requests.get(
                f"{node.url}/subscribers/{crawler_id}", headers=headers, timeout=5
            )
            if answer.status_code == 200:
                subscribers[crawler_id] = answer.json()
    return Seen(crawlers, limits, live, urls, assigned, dict(runs), subscribers)


def spent(seen: Seen) -> set[int]:
    """Users whose crawlers together have stored their whole budget."""
    stored: dict[int, int] = defaultdict(int)
    for crawler in seen.crawlers.values():
        stored[crawler.user_id] += crawler.items_collected
    return {u for u, limit in seen.limits.items() if limit is not None and stored[u] >= limit}


def why_not_runnable(crawler: Crawler, spent_users: set[int], wall: float) -> str | None:
    """The state a crawler that must not run is in (None: it is runnable)."""
    if not crawler.enabled:
        return "disabled"
    if crawler.state == "failed":
        return "failed"
    limit = crawler.item_limit
    if (limit is not None and crawler.items_collected >= limit) or crawler.user_id in spent_users:
        return "limit_reached"
    if not timetable.window_open(crawler.schedule, wall):
        return "scheduled"
    return None


def check(cluster: Cluster, reset: Reset = Reset()) -> None:
    """Every invariant of the module's docstring; one AssertionError listing each breach."""
    seen = look(cluster)
    placing = Placing(cluster.settings.routing, cluster.clock.wall(), spent(seen))
    problems: list[str] = []
    by_key: dict[str, set[int]] = defaultdict(set)
    for crawler_id, crawler in sorted(seen.crawlers.items()):
        problems += placing.problems(seen, crawler)
        for node_id in seen.runs.get(crawler_id, []):
            by_key[crawler.uuid].add(node_id)
    problems += [f"key {key} runs on nodes {sorted(n)}" for key, n in by_key.items() if len(n) > 1]
    problems += assignments_agree(seen) + limits_kept(seen, reset)
    if problems:
        problems.append(f"budgets {seen.limits}; at {cluster.clock.utc():%H:%M:%S}")
    assert not problems, "\n".join(problems)


@dataclass(frozen=True)
class Placing:
    """Where a crawler should run, and in what state, at `wall` (epoch seconds)."""

    strategy: str
    wall: float
    spent_users: set[int]

    def problems(self, seen: Seen, crawler: Crawler) -> list[str]:
        on = seen.runs.get(crawler.id, [])
        said = (
            f"crawler {crawler.id} (state {crawler.state}, on {on}, user {crawler.user_id}, "
            f"items {crawler.items_collected}, lease {crawler.lease})"
        )
        problems = []
        reason = why_not_runnable(crawler, self.spent_users, self.wall)
        if reason is not None:
            if on:
                problems.append(f"{said} runs, but should not: {reason}")
            if crawler.state != reason:
                problems.append(f"{said} should be {reason}")
        elif not on and not can_take(seen, crawler, self.strategy):  # no node, or all full
            if crawler.state != "pending":
                problems.append(f"{said} waits for a node, but is not pending")
        elif not on:
            problems.append(f"{said} is runnable but runs nowhere; live nodes {sorted(seen.live)}")
        else:
            problems += self._placed(seen, crawler, on, said)
        return problems

    def _placed(self, seen: Seen, crawler: Crawler, on: list[int], said: str) -> list[str]:
        problems = []
        if len(on) > 1:
            problems.append(f"{said} runs on several nodes")
        if crawler.state not in PLACED_STATES:
            problems.append(f"{said} runs, but its state says not")
        if on[0] not in seen.live:
            problems.append(f"{said} runs on a node that is not live")
        elif self.strategy != "weighted":  # weighted: where it runs depends on the history
            routed = ROUTERS[self.strategy](crawler.uuid, sorted(seen.live))
            if on[0] != routed:
                problems.append(f"{said}: routing puts it on {routed}")
        return problems


def can_take(seen: Seen, crawler: Crawler, strategy: str) -> bool:
    """Whether some live node can take the crawler (weighted: has room for its key)."""
    if not seen.live:
        return False
    if strategy != "weighted":
        return True
    return any(node.data_sources < node.capacity for node in seen.live.values())


def assignments_agree(seen: Seen) -> list[str]:
    running = {c: nodes[0] for c, nodes in seen.runs.items() if len(nodes) == 1}
    problems = []
    for crawler_id in sorted(set(running) | set(seen.assigned)):
        if running.get(crawler_id) != seen.assigned.get(crawler_id):
            problems.append(
                f"crawler {crawler_id}: SQL assigns it to {seen.assigned.get(crawler_id)}, "
                f"nodes run it on {seen.runs.get(crawler_id)}"
            )
    for crawler_id in seen.runs:
        if crawler_id not in seen.crawlers:
            problems.append(f"crawler {crawler_id} is gone but runs on {seen.runs[crawler_id]}")
    return problems


def limits_kept(seen: Seen, reset: Reset) -> list[str]:
    problems = []
    for crawler_id, status in seen.subscribers.items():
        crawler = seen.crawlers.get(crawler_id)
        if crawler_id in reset.crawlers or crawler is None:
            continue
        limit = crawler.item_limit
        if limit is not None and (status.get("items_collected") or 0) > limit:
            problems.append(f"crawler {crawler_id} holds {status['items_collected']} > {limit}")
    stored: dict[int, int] = defaultdict(int)
    for crawler in seen.crawlers.values():
        stored[crawler.user_id] += crawler.items_collected
    for user_id, limit in seen.limits.items():
        if user_id not in reset.users and limit is not None and stored[user_id] > limit:
            problems.append(f"user {user_id} stored {stored[user_id]} > budget {limit}")
    return problems
