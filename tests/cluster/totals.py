"""The cluster tier's workload and its Jepsen-style totals: what the feeds published against
what the store holds, limits and budgets, billed against delivered, the API's counts against
the distinct items stored.

The feeds are bounded, so a healed cluster goes quiet: static feeds are collected whole, and
growing ones only up to a crawler's item limit or its user's budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import requests
import sqlalchemy

from blackwidow.core.store import Store, StoreUnavailable, open_store
from blackwidow.demo.processes import Running
from tests.cluster.hosts import HostCluster
from tests.summary import CLUSTER_TOTALS
from tests.support import wait_until

STEADY_ITEMS = 30  # a static feed, collected whole
DURING_ITEMS = 20  # a static feed whose crawler is created during the fault
ITEM_LIMIT = 40  # a crawler's, on a feed that keeps growing
BUDGET = 40  # a user's, over two crawlers on growing feeds
SETTLE_WITHIN = 30.0  # seconds after the heal for every total to hold


@dataclass
class Workload:
    """The crawlers a scenario runs, by what their totals must be."""

    tokens: dict[int, str] = field(default_factory=dict)  # crawler id -> its user's token
    whole: dict[int, int] = field(default_factory=dict)  # crawler id -> entries published
    limited: dict[int, int] = field(default_factory=dict)  # crawler id -> item limit
    budgeted: list[int] = field(default_factory=list)  # the budget user's crawlers
    free_token: str = ""

    def add(self, hub: Running, token: str, feed: str, **fields: Any) -> int:
        """A crawler on `feed`, created through `hub`'s API: its id."""
        name = f"c{len(self.tokens) + 1}"  # a user's crawler names are unique
        body = {"name": name, "source": "rss", "query": {"feeds": [feed]}, **fields}
        response = requests.post(
            f"{hub.url}/api/v1/crawlers",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert response.status_code == 201, response.text
        crawler_id: int = response.json()["id"]
        self.tokens[crawler_id] = token
        return crawler_id

    def add_whole(self, cluster: HostCluster, hub: Running, name: str, items: int) -> int:
        """A crawler that must collect all of a static feed's `items` entries: its id."""
        feed = cluster.feed(name, items=items)
        crawler_id = self.add(hub, self.free_token, feed)
        self.whole[crawler_id] = items
        return crawler_id

    def wait_collected(self, cluster: HostCluster, crawler_id: int, within: float = 30.0) -> None:
        """Until the store holds all the crawler's feed, at most `within` seconds."""
        wanted = self.whole[crawler_id]
        with opened_store(cluster) as store:
            wait_until(
                lambda: counted(store, crawler_id) >= wanted, within, f"{wanted} items stored"
            )


def start_workload(cluster: HostCluster) -> Workload:
    """A user without a budget (a static feed, and a growing feed under an item limit) and a
    user with a budget (two growing feeds); waits until every crawler has items."""
    hub = cluster.hub
    assert hub is not None
    workload = Workload(free_token=cluster.user("free"))
    workload.add_whole(cluster, hub, "steady", STEADY_ITEMS)
    growing = cluster.feed("limited", items=4, every=0.25)
    limited = workload.add(hub, workload.free_token, growing, item_limit=ITEM_LIMIT)
    workload.limited[limited] = ITEM_LIMIT
    budget_token = cluster.user("budget", item_limit=BUDGET)
    for name in ("budget-a", "budget-b"):
        feed = cluster.feed(name, items=2, every=0.4)
        workload.budgeted.append(workload.add(hub, budget_token, feed))
    with opened_store(cluster) as store:
        wait_until(
            lambda: all(counted(store, crawler) for crawler in workload.tokens),
            what="every crawler's items",
        )
    return workload


def counted(store: Store, crawler_id: int) -> int:
    """The crawler's stored items; 0 while the store does not answer the test process (a
    Cassandra fault may reach it too)."""
    try:
        return store.count(crawler_id)
    except StoreUnavailable:
        return 0


@contextmanager
def opened_store(cluster: HostCluster) -> Iterator[Store]:
    """The nodes' store (the shared SQLite file, or the Cassandra ring), read by the test
    process, opened as the hub and nodes open it."""
    store = open_store(cluster.env["BLACKWIDOW_STORE"])
    try:
        yield store
    finally:
        store.close()


@dataclass
class Totals:
    lost: int = 0
    duplicated: int = 0
    over_limit: int = 0
    over_budget: int = 0
    billed: int = 0
    delivered: int = 0
    api_vs_store_mismatch: int = 0
    deadlocks: int = 0  # PostgreSQL deadlocks the hubs logged, however they recovered
    mismatched: list[str] = field(default_factory=list)  # crawler id: api against store
    unread: str = ""  # why the store did not answer the test process, when it did not

    def hold(self) -> bool:
        return (
            not self.unread
            and self.lost == self.duplicated == self.over_limit == self.over_budget == 0
            and self.api_vs_store_mismatch == self.deadlocks == 0
            and self.billed == self.delivered
        )

    def line(self, scenario: str, recovery: float | None) -> str:
        took = "never" if recovery is None else f"{recovery:.1f}s"
        figures = (
            f"lost={self.lost} duplicated={self.duplicated} over_limit={self.over_limit} "
            f"over_budget={self.over_budget} billed={self.billed} delivered={self.delivered} "
            f"api_vs_store_mismatch={self.api_vs_store_mismatch} deadlocks={self.deadlocks}"
        )
        detail = f" (crawler api/store: {', '.join(self.mismatched)})" if self.mismatched else ""
        detail += f" (store unread: {self.unread})" if self.unread else ""
        return f"totals scenario={scenario} {figures} recovery={took}{detail}"


def _stored(store: Store, crawler_id: int) -> tuple[set[int], int]:
    """The entry numbers a crawler's stored items carry, and how many items repeat one."""
    ids = list(store.stored_ids(crawler_id))
    return {int(i.rsplit("/", 1)[1]) for i in ids}, len(ids) - len(set(ids))


def measure(cluster: HostCluster, workload: Workload, store: Store) -> Totals:
    totals = Totals()
    for crawler_id, published in workload.whole.items():
        numbers, repeated = _stored(store, crawler_id)
        totals.lost += len(set(range(1, published + 1)) - numbers)
        totals.duplicated += repeated + len(numbers - set(range(1, published + 1)))
    for crawler_id, limit in workload.limited.items():
        numbers, repeated = _stored(store, crawler_id)
        totals.duplicated += repeated
        totals.over_limit += max(0, len(numbers) - limit)
        totals.lost += max(0, limit - len(numbers))  # its feed published more than the limit
    held = 0
    for crawler_id in workload.budgeted:
        numbers, repeated = _stored(store, crawler_id)
        totals.duplicated += repeated
        held += len(numbers)
    totals.over_budget = max(0, held - BUDGET)
    totals.lost += max(0, BUDGET - held)  # its feeds published more than the budget
    counts = {
        row["id"]: row["items_collected"]
        for token in set(workload.tokens.values())
        for row in cluster.every("/api/v1/crawlers", token)
    }
    for crawler_id in workload.tokens:
        counted = counts.get(crawler_id)
        stored = len(set(store.stored_ids(crawler_id)))  # distinct, whoever wrote them
        if counted != stored:
            totals.api_vs_store_mismatch += 1
            totals.mismatched.append(f"{crawler_id}: {counted}/{stored}")
    totals.billed, totals.delivered = billed_and_delivered(cluster.database_url)
    hub_logs = cluster.workdir.glob("hub*.log")
    totals.deadlocks = sum(log.read_text().count("DeadlockDetected: ") for log in hub_logs)
    return totals


def billed_and_delivered(database_url: str) -> tuple[int, int]:
    """The users' billed totals, and the sum of what their data-source runs delivered."""
    engine = sqlalchemy.create_engine(database_url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as connection:
            billed = connection.scalar(
                sqlalchemy.text("SELECT COALESCE(SUM(delivered), 0) FROM billed_totals")
            )
            delivered = connection.scalar(
                sqlalchemy.text("SELECT COALESCE(SUM(delivered), 0) FROM source_runs")
            )
    finally:
        engine.dispose()
    return int(billed), int(delivered)


def settle(
    cluster: HostCluster, workload: Workload, scenario: str, healed_at: float, notes: str = ""
) -> None:
    """Wait until every total holds, at most SETTLE_WITHIN after the heal; print the totals
    line with the recovery time (and `notes`), and fail naming the totals that did not hold."""
    with opened_store(cluster) as store:
        deadline = healed_at + SETTLE_WITHIN
        while True:
            try:
                totals = measure(cluster, workload, store)
            except StoreUnavailable as error:  # a store just healed: asked again
                totals = Totals(unread=str(error))
            if totals.hold() or time.monotonic() > deadline:
                break
            time.sleep(0.25)
    recovery = time.monotonic() - healed_at if totals.hold() else None
    line = totals.line(scenario, recovery) + (f" {notes}" if notes else "")
    CLUSTER_TOTALS.append(line)
    print(line)
    assert totals.hold(), line
