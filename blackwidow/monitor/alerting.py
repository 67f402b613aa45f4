"""The poll half's alert transitions: node.dead, node.left, node.holding, source.failing and the
budget crossings, each emitted once per transition, in the poll's own transaction.

node.dead, node.left and the budget crossings compare with what SQL held before the poll, so a new
leader never repeats them. How long a data source has failed, and whether a node was already
reported holding, are kept in memory: a new leader judges them afresh, so one still true at a
change of leader is reported once more (with a new event id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from blackwidow.alerts import events
from blackwidow.alerts.events import Emitter, Event
from blackwidow.models import Crawler, User
from blackwidow.monitor.memory.crawlers import Tracked, chunks


class Holding(Protocol):
    held: int


class PollAlerts:
    def __init__(self, alerts: Emitter, failing_after: float, holding_items: int) -> None:
        self._alerts = alerts
        self._failing_after = failing_after
        self._holding_items = holding_items
        self._failing_since: dict[int, float] = {}  # crawler -> when its source began failing
        self._failing_told: set[int] = set()
        self._holding: set[int] = set()  # nodes reported holding, until they hold less
        self._grown: dict[int, int] = {}  # user -> items their crawlers stored this poll
        self._pending: list[Event] = []

    def node_dead(self, session: Session, node_id: int, url: str) -> None:
        self._holding.discard(node_id)
        self._alerts.emit(session, [events.node_dead(node_id, url)])

    def node_left(self, session: Session, node_id: int, url: str, crawlers_held: int) -> None:
        self._holding.discard(node_id)
        self._alerts.emit(session, [events.node_left(node_id, url, crawlers_held)])

    def failing(self, crawler_id: int, failing: bool, now: float) -> None:
        """A crawler's data source began or stopped getting nothing (as its node says)."""
        if failing:
            self._failing_since.setdefault(crawler_id, now)
        else:
            self._failing_since.pop(crawler_id, None)
            self._failing_told.discard(crawler_id)

    def counted(self, user_id: int, grown: int) -> None:
        self._grown[user_id] = self._grown.get(user_id, 0) + grown

    def failing_due(self, crawlers: Mapping[int, Tracked], now: float) -> None:
        """source.failing for crawlers failing past the threshold, one event per data source
        and user (under the memory's lock: no I/O)."""
        groups: dict[tuple[str, int], list[Tracked]] = {}
        for crawler_id, since in list(self._failing_since.items()):
            crawler = crawlers.get(crawler_id)
            if crawler is None or not crawler.failing:
                self.failing(crawler_id, False, now)
            elif now - since >= self._failing_after and crawler_id not in self._failing_told:
                self._failing_told.add(crawler_id)
                groups.setdefault((crawler.uuid, crawler.user_id), []).append(crawler)
        for (key, user_id), shared in groups.items():
            longest = now - min(self._failing_since[c.id] for c in shared)
            ids = [c.id for c in shared]
            self._pending.append(
                events.source_failing(key, shared[0].source, user_id, ids, longest)
            )

    def holding(self, reports: Mapping[int, Holding | None], urls: Mapping[int, str]) -> None:
        """node.holding when a node's held items reach the threshold; again only after they
        fell below it."""
        for node_id, report in reports.items():
            if report is None:
                continue
            if report.held < self._holding_items:
                self._holding.discard(node_id)
            elif node_id not in self._holding:
                self._holding.add(node_id)
                event = events.node_holding(
                    node_id, urls[node_id], report.held, self._holding_items
                )
                self._pending.append(event)

    def budgets(self, session: Session, limits: Mapping[int, int]) -> None:
        """Budget crossings of users whose crawlers stored items this poll, judged before the
        poll's counts are written. The users' rows are locked first, so shard leaders
        recording counts of one user at once see each other's totals."""
        grown = {u: n for u, n in self._grown.items() if n > 0 and u in limits}
        self._grown = {}
        for chunk in chunks(grown):
            session.execute(
                update(User).where(User.id.in_(chunk)).values(item_limit=User.item_limit)
            )
            totals = session.execute(
                select(Crawler.user_id, func.sum(Crawler.items_collected))
                .where(Crawler.user_id.in_(chunk))
                .group_by(Crawler.user_id)
            )
            for user_id, total in totals:
                before = int(total or 0)
                crossed = events.budget_crossings(
                    user_id, limits[user_id], before, before + grown[user_id]
                )
                self._pending += crossed

    def flush(self, session: Session) -> None:
        """Emit what this poll found, in its transaction."""
        pending, self._pending = self._pending, []
        self._alerts.emit(session, pending)
