"""The poll half of a monitor cycle (docs/architecture.md "How a crawler runs", step 3): poll
every node, record what changed, judge the silent nodes. Runs on its own schedule, so
placement work never delays a poll.

Only the leader of shard 0 judges nodes (the failure detector, dead nodes' generations);
every shard's leader polls every node for its own crawlers and records their statuses.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import bindparam, case, delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import node_records
from blackwidow.core.node_protocol import REPLAY_WINDOW
from blackwidow.models import LIVE_NODE_STATES, POLLED_NODE_STATES, Assignment, Node, utcnow
from blackwidow.monitor import pruning, quota_grants, rates
from blackwidow.monitor.alerting import PollAlerts
from blackwidow.monitor.detector import FailureDetector, Verdict
from blackwidow.monitor.figures import MonitorFigures
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.poller import NodeReport, poll_all
from blackwidow.monitor.report_intake import StatusIntake
from blackwidow.monitor.silent_nodes import ProbeSchedule, Silences
from blackwidow.node_client import NodeClient, NodeTarget
from sources.backoff import Backoff

log = logging.getLogger(__name__)

# phi of every node costs about 0.2 ms each: shown to operators at most this often
PHI_SHOWN_EVERY = 10.0
PROBE_BACKOFF = Backoff(first=2.0, cap=30.0)  # seconds between probes of a silent dead node

_answered = (
    update(Node.__table__)
    .where(Node.id == bindparam("node"), Node.generation == bindparam("b_generation"))
    .values(
        state=case((Node.__table__.c.state == "leaving", "leaving"), else_="active"),
        last_polled_at=bindparam("at"),
        subscribers=bindparam("subscribers"),
        data_sources=bindparam("sources"),
        cpu_percent=bindparam("cpu"),
        memory_bytes=bindparam("memory"),
    )
)


class Liveness:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        client: NodeClient,
        detector: FailureDetector | None,
        memory: ShardMemory,
        clock: Callable[[], float],
        probe_dead_for: float,
        leading: Callable[[], bool] = lambda: True,
        *,
        fence: Callable[[Session], None] = lambda session: None,
        watch: PollAlerts,
        dead_node_retention: float = 86_400.0,
        figures: MonitorFigures | None = None,
        probe_backoff: Backoff = PROBE_BACKOFF,
        wall: Callable[[], float] = time.time,  # the clock shown rates are sampled at
        rate_window: float = rates.DEFAULT_WINDOW,
    ) -> None:
        self._sessions = sessions
        self._figures = figures or MonitorFigures()
        self._client = client
        self._detector = detector  # None: another shard's leader judges the nodes
        self._memory = memory
        self._clock = clock
        self._probe_dead_for = probe_dead_for
        self._probes = ProbeSchedule(probe_backoff)  # dead nodes are probed less and less often
        self._silences = Silences(clock)  # a node's failing polls: one line, not one a poll
        self._leading = leading  # False once the lock lapsed: a stale leader records nothing
        # raises unless the lock is still this leader's, in the database; called last in
        # each transaction, once SQLite's write lock is held (PostgreSQL: see leader.fence)
        self._fence = fence
        self._watch = watch
        self._statuses = StatusIntake(memory, watch, wall, rate_window)
        self._dead_node_retention = dead_node_retention
        self._pruned_at: float | None = None
        self._started_at = clock()  # a node silent since before it may have answered then
        self._phi_shown_at: float | None = None

    def poll_once(self) -> None:
        with self._sessions.begin() as session:
            targets, probes = self._targets(session)
        self._silences.keep([*targets, *(probe.id for probe in probes)])
        probes = self._probes.due(probes, self._clock())
        unanswered: dict[int, tuple[float, float]] = {}
        reports = poll_all(
            self._client,
            [*targets.values(), *probes],
            self._memory.since_of,
            self._clock,
            unanswered,
            self._figures,
            self._silences,
        )
        for probe in probes:  # a dead node's answer is not a heartbeat: it only fences it
            answer = reports.pop(probe.id, None)
            self._probes.probed(probe.id, answer is not None, self._clock())
        failed = sum(1 for report in reports.values() if report is None)
        self._figures.count("polls.ok", len(reports) - failed)
        self._figures.count("polls.failed", failed)
        now = self._clock()
        if not self._leading():  # it stalled past its lock mid-poll: its view is not news
            return
        with self._sessions.begin() as session:  # heartbeats stand whatever statuses hold
            gone = self._record_nodes(session, reports, targets, now, unanswered)
            rows = session.execute(
                select(Node.id, Node.capacity)
                .where(Node.state.in_(LIVE_NODE_STATES))
                .order_by(Node.id)
            )
            capacity = {row.id: row.capacity for row in rows}
            self._fence(session)
        try:
            with self._sessions.begin() as session:
                taken = self._statuses.record(session, reports, targets, now)
                if self._detector is not None:  # one leader judges nodes, so one tells of them
                    self._watch.holding(reports, {n: t.url for n, t in targets.items()})
                self._watch.flush(session)
                self._fence(session)
        except Exception:
            # nothing remembered, so the nodes report the same again; the reconciler runs
            # meanwhile: what made the statuses fail may be a crawler change it takes
            self._statuses.rolled_back()
            self._memory.polled.set()
            raise
        self._remember(reports, targets, gone, capacity, taken)
        self._prune(now)

    def _prune(self, now: float) -> None:
        """Shard 0's housekeeping, at most once per PRUNE_INTERVAL: dead nodes past retention
        and nodes that left, then delivery runs that can report no more."""
        if self._detector is None:
            return
        if self._pruned_at is not None and now - self._pruned_at < pruning.PRUNE_INTERVAL:
            return
        self._pruned_at = now
        silent_since = utcnow() - timedelta(seconds=self._dead_node_retention)
        with self._sessions.begin() as session:
            deleted = pruning.forget_dead_nodes(session, silent_since)
            left_before = utcnow() - timedelta(seconds=node_records.LEFT_KEPT_FOR)
            deleted += node_records.forget_left(session, left_before)
            runs = pruning.forget_finished_runs(
                session, utcnow() - timedelta(seconds=2 * REPLAY_WINDOW)
            )
        if deleted or runs:
            log.info("pruned dead_nodes=%s runs=%s", deleted, runs)

    def _targets(self, session: Session) -> tuple[dict[int, NodeTarget], list[NodeTarget]]:
        """Live and leaving nodes to poll, and recently dead ones to probe.

        A node written off while only partitioned may still be crawling. Its probe carries
        the generation it was declared dead in, newer than its own, so as soon as it can be
        reached again it drops everything and registers anew (within one cycle of the heal,
        not after its own detach timer). After `probe_dead_for` it has detached by itself.
        """
        recent = utcnow() - timedelta(seconds=self._probe_dead_for)
        rows = session.execute(
            select(Node.id, Node.url, Node.generation, Node.state).where(
                Node.state.in_(POLLED_NODE_STATES)
                | ((Node.state == "dead") & (Node.last_polled_at > recent))
            )
        )
        targets, probes = {}, []
        for row in rows:
            target = NodeTarget(row.id, row.url, row.generation)
            if row.state == "dead":
                probes.append(target)
            else:
                targets[row.id] = target
        return targets, probes

    def _record_nodes(
        self,
        session: Session,
        reports: dict[int, NodeReport | None],
        targets: dict[int, NodeTarget],
        now: float,
        unanswered: dict[int, tuple[float, float]],
    ) -> set[int]:
        """Answered nodes in one statement; silent ones judged, each as of when its poll
        failed (`unanswered`: sent at, failed at). The nodes this leader lost."""
        answered = [
            {
                "node": node_id,
                "b_generation": targets[node_id].generation,
                "at": utcnow(),
                "subscribers": report.subscriber_total,
                "sources": report.load.data_sources if report.load else report.data_source_total,
                "cpu": report.load.cpu_percent if report.load else None,
                "memory": report.load.memory_bytes if report.load else None,
            }
            for node_id, report in reports.items()
            if report is not None
        ]
        if answered and self._detector is not None:
            session.execute(_answered, answered)
        if self._detector is None:
            return set()
        for node_id, report in reports.items():
            if report is not None:
                self._detector.heartbeat(node_id, report.answered_at, report.asked_at)
        silent = [node_id for node_id, report in reports.items() if report is None]
        gone = set()
        for node_id in silent:
            asked_at, failed_at = unanswered.get(node_id, (now, now))
            self._detector.missed(node_id, asked_at)
            if self._judge(session, targets[node_id], failed_at):
                gone.add(node_id)
        if self._phi_shown_at is None or now - self._phi_shown_at >= PHI_SHOWN_EVERY:
            self._phi_shown_at = now
            detector = self._detector
            self._figures.judged({n: detector.phi(n, now) for n in reports if n not in gone})
        return gone

    def _judge(self, session: Session, target: NodeTarget, now: float) -> bool:
        """Judge a silent node; True when it is declared dead now."""
        assert self._detector is not None
        node = session.get(Node, target.id)
        if node is None or node.generation != target.generation:
            return False  # it registered again meanwhile: judge the new generation next cycle
        if node.state == "leaving":  # it said it stops: silence is its leaving, not a death
            held = self._write_off(session, node, "left")
            log.info("node left node=%s url=%s crawlers_held=%s", node.id, node.url, held)
            self._watch.node_left(session, node.id, node.url, held)
            return True
        verdict = self._detector.verdict(node.id, now)
        if verdict is Verdict.DEAD:
            log.warning("node declared dead node=%s url=%s", node.id, node.url)
            self._write_off(session, node, "dead")
            self._watch.node_dead(session, node.id, node.url)
            return True
        shown = "suspect" if verdict is Verdict.SUSPECT else "active"
        if node.state != shown:
            log.warning("node %s node=%s url=%s", shown, node.id, node.url)
            node.state = shown
        return False

    def _write_off(self, session: Session, node: Node, state: str) -> int:
        """A node gone (dead, or left): its generation fenced off (see _targets), its
        assignments dropped; how many crawlers it still held. They move as a lost node's
        do (_remember): a bounded one once its leases there would have lapsed."""
        assert self._detector is not None
        node.state = state
        node.generation += 1
        self._detector.forget(node.id)
        dropped = session.execute(delete(Assignment).where(Assignment.node_id == node.id))
        return int(dropped.rowcount or 0)

    def _remember(
        self,
        reports: dict[int, NodeReport | None],
        targets: dict[int, NodeTarget],
        gone: set[int],
        capacity: dict[int, int],
        taken: bool,
    ) -> None:
        """Into the shard's memory: what the nodes reported, the live nodes with their
        capacity, and each one's data sources (what weighted routing leaves room by). A
        node's cursor moves only when its statuses were `taken`."""
        memory = self._memory
        live = tuple(capacity)
        with memory.lock:
            memory.targets = targets
            memory.capacity = capacity
            for node_id, report in reports.items():
                if report is not None:
                    total = report.load.data_sources if report.load else report.data_source_total
                    memory.data_sources[node_id] = total
            for node_id in gone:
                memory.dirty |= quota_grants.lose_node(memory, node_id, self._started_at)
            for node_id, report in reports.items():
                memory.dirty |= memory.reported.apply(node_id, report, move_cursor=taken)
            for node_id in set(memory.reported.nodes()) - set(reports):
                # no longer polled: dead, or gone
                memory.dirty |= quota_grants.lose_node(memory, node_id, self._started_at)
            if live != memory.live:
                joined, left = (
                    sorted(set(live) - set(memory.live)),
                    sorted(set(memory.live) - set(live)),
                )
                log.info(
                    "node set changed nodes=%s joined=%s left=%s", len(live), joined[:20], left[:20]
                )
                memory.live = live
                for node_id in set(memory.data_sources) - set(live):
                    del memory.data_sources[node_id]
        memory.polled.set()  # the reconciler runs after every poll, or as soon as it is free
