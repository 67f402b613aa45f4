"""What nodes said of a shard's crawlers, taken into the monitor's memory and SQL: counts,
errors, failing flags, deliveries (live and stopped runs), the rates leases follow and the
samples the rate shown is read from (blackwidow.monitor.rates).

Part of the poll half of a cycle (blackwidow.monitor.liveness), which decides nothing here:
the reconciler acts on the crawlers this marks dirty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from blackwidow.monitor import billing, rates
from blackwidow.monitor.alerting import PollAlerts
from blackwidow.monitor.memory.crawlers import Tracked, write
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.poller import NodeReport
from blackwidow.node_client import NodeTarget

RATE_SMOOTHING = 0.5  # weight of the newest sample of the rate leases follow
# what a poll's statuses change in a crawler, put back when its transaction fails
POLLED = (
    "failing",
    "last_error",
    "items_delivered",
    "items_collected",
    "lost_until",
    "rate",
    "rate_samples",
)


class StatusIntake:
    def __init__(
        self,
        memory: ShardMemory,
        watch: PollAlerts,
        wall: Callable[[], float],
        rate_window: float,
    ) -> None:
        self._memory = memory
        self._watch = watch
        # the rate shown is sampled at the hub's wall clock, which the API reads it at
        self._wall = wall
        self._rate_window = rate_window
        self._lease_samples: dict[int, tuple[int, float]] = {}  # crawler -> (count, at)
        # the crawlers this poll changed, as they were, until its transaction commits
        self._before: dict[int, tuple[Tracked, tuple[Any, ...]]] = {}

    def record(
        self,
        session: Session,
        reports: dict[int, NodeReport | None],
        targets: dict[int, NodeTarget],
        now: float,
    ) -> bool:
        """What the nodes said of this shard's crawlers, written for those that changed. False
        when nothing could be taken: a new leader's crawlers are not read yet, so the nodes'
        cursors must not move past these statuses (they are asked for again)."""
        self._before = {}
        if not self._memory.loaded:
            return False
        answered = [
            (billing.Origin(node_id, targets[node_id].generation), report)
            for node_id, report in reports.items()
            if report is not None
        ]
        reported = [(o, d) for o, r in answered for d in (*r.data_sources, *r.departed)]
        billing.record_sources(session, reported)
        statuses = [(origin, s) for origin, report in answered for s in report.subscribers]
        departed = [(o, s) for o, report in answered for s in report.departed_subscribers]
        heard = [status for _, status in (*statuses, *departed)]
        runs = billing.known_runs(session, heard)
        # crawlers deleted meanwhile: the memory drops them when the reconciler takes the change
        deleted = billing.vanished(session, heard, runs)
        statuses = [(o, s) for o, s in statuses if s.get("crawler_id") not in deleted]
        departed = [(o, s) for o, s in departed if s.get("crawler_id") not in deleted]
        rows: dict[int, dict[str, Any]] = {}
        heard_at = (now, self._wall())
        with self._memory.lock:
            crawlers = self._memory.crawlers
            for origin, status in statuses:
                crawler = crawlers.get(int(status["crawler_id"]))
                if crawler is not None:
                    rows[crawler.id] = self._take_status(
                        session, crawler, (origin, status), runs, heard_at
                    )
            self._decay_idle_rates(reports, rows, now)
            for crawler_id, total in self._take_departed(session, departed, runs).items():
                rows.setdefault(crawler_id, {})["items_delivered"] = total
            self._watch.failing_due(crawlers, now)
            limits = dict(self._memory.limits)
        self._watch.budgets(session, limits)  # before the counts are written
        write(session, {c: row for c, row in rows.items() if row})
        return True

    def _take_departed(
        self, session: Session, departed: list[tuple[billing.Origin, dict]], runs: dict
    ) -> dict[int, int]:
        """Stopped subscribers' final deliveries: crawler id -> its new items_delivered, for
        those that grew (memory's lock held)."""
        grown: dict[int, int] = {}
        for origin, status in departed:
            crawler_id = status.get("crawler_id")
            crawler = self._memory.crawlers.get(crawler_id) if isinstance(crawler_id, int) else None
            if crawler is not None:
                self._keep(crawler)
                before = crawler.items_delivered
                billing.record(session, runs, crawler, status, origin)
                if crawler.items_delivered != before:
                    grown[crawler.id] = crawler.items_delivered
        return grown

    def _take_status(
        self,
        session: Session,
        crawler: Tracked,
        heard: tuple[billing.Origin, dict],
        runs: dict,
        heard_at: tuple[float, float],
    ) -> dict[str, Any]:
        """Apply one subscriber status, as heard from a node at `heard_at` (the monitor's
        clock, the wall clock), to the crawler; the columns that changed."""
        origin, status = heard
        now, wall_at = heard_at
        self._keep(crawler)
        before = (crawler.last_error, crawler.items_delivered, crawler.items_collected)
        if crawler.failing != bool(status.get("failing")):
            crawler.failing = not crawler.failing
            self._memory.dirty.add(crawler.id)  # its state follows
            self._watch.failing(crawler.id, crawler.failing, now)
        crawler.last_error = status.get("last_error")
        billing.record(session, runs, crawler, status, origin)
        if status.get("items_collected") is not None:  # None: its store has not answered yet
            count = int(status["items_collected"])
            self._sample(crawler, count, now)
            crawler.rate_samples = rates.sampled(
                crawler.rate_samples, count, wall_at, self._rate_window
            )
            self._watch.counted(crawler.user_id, count - crawler.items_collected)
            crawler.items_collected = count
            crawler.lost_until = None  # counted from the store after any lost node stopped
        after = (crawler.last_error, crawler.items_delivered, crawler.items_collected)
        if before == after:
            return {}
        self._memory.dirty.add(crawler.id)  # a count may end it, or change its lease
        return {
            "last_error": crawler.last_error,
            "items_delivered": crawler.items_delivered,
            "items_collected": crawler.items_collected,
            "rate": crawler.rate,
            "rate_samples": rates.stored(crawler.rate_samples),
        }

    def _keep(self, crawler: Tracked) -> None:
        self._before.setdefault(crawler.id, (crawler, tuple(getattr(crawler, a) for a in POLLED)))

    def rolled_back(self) -> None:
        """The poll's transaction failed: its crawlers are put back as they were, so the same
        statuses, asked for again (the cursors did not move), are counted and written again
        rather than found already in memory (or their deliveries counted twice)."""
        with self._memory.lock:
            for crawler, before in self._before.values():
                for name, value in zip(POLLED, before, strict=True):
                    setattr(crawler, name, value)
        self._before = {}

    def _sample(self, crawler: Tracked, count: int, now: float) -> None:
        """The rate leases follow: quick to rise with a burst, so a busy crawler's lease
        grows within a poll or two, which a rate over minutes would not."""
        previous = self._lease_samples.get(crawler.id)
        if previous is not None and now > previous[1]:
            sample = max(0, count - previous[0]) / (now - previous[1])
            crawler.rate = RATE_SMOOTHING * sample + (1 - RATE_SMOOTHING) * crawler.rate
        self._lease_samples[crawler.id] = (count, now)

    def _decay_idle_rates(
        self, reports: dict[int, NodeReport | None], rows: dict[int, dict], now: float
    ) -> None:
        """A crawler with a user budget that stored nothing this poll has its leases' rate
        fall, so its lease shrinks to what it uses (only budgets need it; the rate shown
        falls by itself, being read over a window)."""
        reported, crawlers, limits = (
            self._memory.reported,
            self._memory.crawlers,
            self._memory.limits,
        )
        for node_id, report in reports.items():
            if report is None:
                continue
            for crawler_id in reported.crawlers_on(node_id):
                crawler = crawlers.get(crawler_id)
                if crawler is None or crawler_id in rows or crawler.user_id not in limits:
                    continue
                if crawler.rate > 0:
                    self._sample(crawler, crawler.items_collected, now)
