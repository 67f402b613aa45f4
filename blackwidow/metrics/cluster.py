"""What a scrape of the hub says of the cluster and of its dependencies: the figures read from
SQL (blackwidow.metrics.cluster_figures), whether the database and the store answered this
process, and how old the SQL figures are.

A scrape waits at most SCRAPE_WAIT for the database and the store (both asked at once); past
it, or when they fail, it answers from the rows last read, whose ages and leaders are judged
as of the scrape, and says so: `blackwidow_database_up 0` and the figures' age. So `/metrics`
answers 200 while the database is down, and Prometheus tells a dead database from a dead hub.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, Metric
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.core.node_protocol import Shard
from blackwidow.core.store import Store
from blackwidow.db import is_contention, is_unreachable
from blackwidow.metrics import cluster_figures
from blackwidow.metrics.bounded import BoundedRead
from blackwidow.models import utcnow
from blackwidow.monitor.leader import lock_name

SCRAPE_WAIT = 2.0  # seconds a scrape waits for the database and the store, well inside 10 s


class ClusterCollector(Collector):
    def __init__(
        self,
        sessions: sessionmaker[Session],
        store: Store,
        shards: int,
        clock: Callable[[], datetime] = utcnow,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._shards = {f"{i}/{shards}": lock_name(Shard(i, shards)) for i in range(shards)}
        self._clock = clock
        self._timer = timer
        self._sql = BoundedRead("sql", self._read, _outage, timer)
        self._store = BoundedRead("store", store.ping, clock=timer)

    def _read(self) -> cluster_figures.ClusterRows:
        with self._sessions() as session:
            return cluster_figures.read(session, list(self._shards.values()), self._clock())

    def collect(self) -> Iterator[Metric]:
        deadline = self._timer() + SCRAPE_WAIT
        self._sql.start()
        self._store.start()
        sql, store = self._sql.settle(deadline), self._store.settle(deadline)
        yield GaugeMetricFamily(
            "blackwidow_database_up",
            "1 when the hub's database answered this process's latest read in time, else 0",
            value=1 if sql.answered else 0,
        )
        yield GaugeMetricFamily(
            "blackwidow_store_up",
            "1 when the item store answered this process's latest ping in time, else 0",
            value=1 if store.answered and store.value else 0,
        )
        age = cluster_figures.INFINITY if sql.read_at is None else self._timer() - sql.read_at
        yield GaugeMetricFamily(
            "blackwidow_sql_figures_age_seconds",
            "Seconds since the figures read from SQL were read (+Inf: never since start)",
            value=max(0.0, age),
        )
        if sql.value is not None:
            yield from cluster_figures.families(sql.value, self._shards, self._clock())


def _outage(error: BaseException) -> bool:
    """A database that does not answer, or not in time: said by the figures, not logged."""
    return is_unreachable(error) or is_contention(error)
