"""The cluster's figures, read from SQL when scraped: nodes and crawlers by state, each
node's last poll age, leases and budgets, and the monitor shards' saved figures.

Everything comes from where it lives (SQL), never from this process's memory, so every hub
process and every gunicorn worker answers a scrape with the same cluster figures. Per-user
and per-crawler figures stay in the REST API: no user or crawler id is ever a label here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, Metric
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.core.node_protocol import Shard
from blackwidow.metrics import monitor_figures
from blackwidow.models import Crawler, MonitorLock, Node, User, utcnow
from blackwidow.monitor.leader import lock_name
from blackwidow.monitor.states import CRAWLER_STATES

NODE_STATES = ("active", "suspect", "dead")


class ClusterCollector(Collector):
    def __init__(
        self,
        sessions: sessionmaker[Session],
        shards: int,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._sessions = sessions
        self._locks = [lock_name(Shard(index, shards)) for index in range(shards)]
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        with self._sessions() as session:
            nodes = session.execute(select(Node.id, Node.state, Node.last_polled_at)).all()
            crawlers = dict(
                session.execute(select(Crawler.state, func.count()).group_by(Crawler.state)).all()
            )
            budgets = session.execute(
                select(User.item_limit, func.sum(Crawler.items_collected), func.sum(Crawler.lease))
                .outerjoin(Crawler, Crawler.user_id == User.id)
                .where(User.item_limit.is_not(None))
                .group_by(User.id, User.item_limit)
            ).all()
            saved = session.scalars(
                select(MonitorLock.figures).where(MonitorLock.name.in_(self._locks))
            ).all()
        now = self._clock()
        yield _by_state("blackwidow_nodes", "Nodes by state", NODE_STATES, nodes)
        yield _counted("blackwidow_crawlers", "Crawlers by state", CRAWLER_STATES, crawlers)
        yield _poll_ages(nodes, now)
        yield from _budgets(budgets)
        yield from monitor_figures.families([s for s in saved if s], [node.id for node in nodes])


def _by_state(name: str, documentation: str, states: tuple[str, ...], rows: list) -> Metric:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    return _counted(name, documentation, states, counts)


def _counted(name: str, documentation: str, states: tuple[str, ...], counts: dict) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=["state"])
    for state in (*states, *sorted(set(counts) - set(states))):
        family.add_metric([state], counts.get(state, 0))
    return family


def _poll_ages(nodes: list, now: datetime) -> Metric:
    family = GaugeMetricFamily(
        "blackwidow_node_last_poll_age_seconds",
        "Seconds since the node last answered a poll",
        labels=["node"],
    )
    for node in sorted(nodes, key=lambda n: n.id):
        if node.last_polled_at is not None:
            family.add_metric([str(node.id)], (now - node.last_polled_at).total_seconds())
    return family


def _budgets(rows: list) -> Iterator[Metric]:
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
