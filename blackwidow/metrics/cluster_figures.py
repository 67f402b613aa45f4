"""The cluster's figures, read from SQL: nodes and crawlers by state, each node's last poll
age, leases and budgets, each monitor shard's leader and last cycle with its saved figures,
and the webhook outbox.

Everything comes from where it lives (SQL), never from this process's memory, so every hub
process and every gunicorn worker answers a scrape with the same cluster figures. The rows are
read once (`read`) and turned into figures as of the scrape (`families`): ages and leaders
are judged then, so figures from rows read before the database stopped answering still age.
Per-user and per-crawler figures stay in the REST API: no user or crawler id is ever a label.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Metric
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blackwidow.metrics import monitor_figures, outbox_figures
from blackwidow.models import Crawler, MonitorLock, Node, User
from blackwidow.monitor.states import CRAWLER_STATES

NODE_STATES = ("active", "suspect", "dead")
INFINITY = float("inf")  # the age of what was never seen


@dataclass(frozen=True)
class ClusterRows:
    """What one read of SQL found, as of `read_at`."""

    read_at: datetime
    nodes: Sequence[Any]  # (id, state, last_polled_at)
    crawlers: dict[str, int]  # state -> crawlers
    budgets: Sequence[Any]  # (item_limit, items stored, items leased) per user with a budget
    locks: dict[str, Any]  # lock name -> (holder, expires_at, epoch, last_cycle_at, figures)
    outbox: outbox_figures.OutboxRows


def read(session: Session, locks: Sequence[str], now: datetime) -> ClusterRows:
    """Every row the cluster's figures need, in one session."""
    return ClusterRows(
        read_at=now,
        nodes=session.execute(select(Node.id, Node.state, Node.last_polled_at)).all(),
        crawlers=dict(
            session.execute(select(Crawler.state, func.count()).group_by(Crawler.state)).all()
        ),
        budgets=session.execute(
            select(User.item_limit, func.sum(Crawler.items_collected), func.sum(Crawler.lease))
            .outerjoin(Crawler, Crawler.user_id == User.id)
            .where(User.item_limit.is_not(None))
            .group_by(User.id, User.item_limit)
        ).all(),
        locks={
            row.name: row
            for row in session.execute(
                select(
                    MonitorLock.name,
                    MonitorLock.holder,
                    MonitorLock.expires_at,
                    MonitorLock.epoch,
                    MonitorLock.last_cycle_at,
                    MonitorLock.figures,
                ).where(MonitorLock.name.in_(locks))
            )
        },
        outbox=outbox_figures.read(session, now),
    )


def families(rows: ClusterRows, shards: dict[str, str], now: datetime) -> Iterator[Metric]:
    """The figures of `rows` as of `now`; `shards` maps each shard's label to its lock."""
    yield _by_state("blackwidow_nodes", "Nodes by state", NODE_STATES, rows.nodes)
    yield _counted("blackwidow_crawlers", "Crawlers by state", CRAWLER_STATES, rows.crawlers)
    yield _poll_ages(rows.nodes, now)
    yield from _budgets(rows.budgets)
    yield from _shards(rows.locks, shards, now)
    yield from outbox_figures.families(rows.outbox, now)
    saved = [lock.figures for lock in rows.locks.values() if lock.figures]
    yield from monitor_figures.families(saved, [node.id for node in rows.nodes])


def _by_state(name: str, documentation: str, states: tuple[str, ...], rows: Sequence) -> Metric:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    return _counted(name, documentation, states, counts)


def _counted(name: str, documentation: str, states: tuple[str, ...], counts: dict) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=["state"])
    for state in (*states, *sorted(set(counts) - set(states))):
        family.add_metric([state], counts.get(state, 0))
    return family


def _poll_ages(nodes: Sequence, now: datetime) -> Metric:
    family = GaugeMetricFamily(
        "blackwidow_node_last_poll_age_seconds",
        "Seconds since the node last answered a poll",
        labels=["node"],
    )
    for node in sorted(nodes, key=lambda n: n.id):
        if node.last_polled_at is not None:
            family.add_metric([str(node.id)], _age(node.last_polled_at, now))
    return family


def _shards(locks: dict[str, Any], shards: dict[str, str], now: datetime) -> Iterator[Metric]:
    """Each shard's leader, as blackwidow.health judges it: a holder whose lease runs on."""
    leader = GaugeMetricFamily(
        "blackwidow_shard_leader",
        "1 while a hub holds the shard's leader lock unexpired, else 0",
        labels=["shard"],
    )
    cycle = GaugeMetricFamily(
        "blackwidow_shard_last_cycle_age_seconds",
        "Seconds since the shard's leader last finished a monitor cycle (+Inf: never)",
        labels=["shard"],
    )
    epoch = GaugeMetricFamily(
        "blackwidow_shard_epoch",
        "Times the shard's leader lock changed hands",
        labels=["shard"],
    )
    for shard, name in shards.items():
        lock = locks.get(name)
        leading = bool(lock and lock.holder and lock.expires_at and lock.expires_at > now)
        leader.add_metric([shard], 1 if leading else 0)
        last = lock.last_cycle_at if lock else None
        cycle.add_metric([shard], INFINITY if last is None else _age(last, now))
        epoch.add_metric([shard], lock.epoch if lock else 0)
    yield from (leader, cycle, epoch)


def _age(at: datetime, now: datetime) -> float:
    return max(0.0, (now - at).total_seconds())


def _budgets(rows: Sequence) -> Iterator[Metric]:
    """Sums over the users with a budget; each user's own figures are on the REST API."""
    stored = [(limit, int(count or 0), int(leased or 0)) for limit, count, leased in rows]
    yield GaugeMetricFamily(
        "blackwidow_leased_items",
        "Items the crawlers of users with a budget may store under their leases",
        value=sum(leased for _, _, leased in stored),
    )
    yield GaugeMetricFamily(
        "blackwidow_budget_remaining_items",
        "Items the users with a budget may still store, summed over them",
        value=sum(max(0, limit - count) for limit, count, _ in stored),
    )
    yield GaugeMetricFamily(
        "blackwidow_users_budget_exhausted",
        "Users whose crawlers have stored their whole budget",
        value=sum(1 for limit, count, _ in stored if count >= limit),
    )
