"""One monitor cycle (README step 3): poll, record, detect deaths, route, lease, push, record.

Network calls happen between SQL transactions, never inside one, so a slow node does not
hold a database lock. The decisions are the pure modules' (routing, reload, quota, states),
gathered by blackwidow.monitor.desired; delivered items are counted by its deliveries module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.models import LIVE_NODE_STATES, Assignment, Crawler, Node, SubscriberRun, utcnow
from blackwidow.monitor import deliveries, leases
from blackwidow.monitor.desired import desired_subscribers, facts
from blackwidow.monitor.detector import FailureDetector, Verdict
from blackwidow.monitor.node_client import (
    NodeClient,
    NodeRejected,
    NodeTarget,
    NodeUnreachable,
)
from blackwidow.monitor.poller import NodeReport, poll_all
from blackwidow.monitor.reload import Plan, plan_reload
from blackwidow.monitor.states import state_of
from sources.model import SubscriberSpec

log = logging.getLogger(__name__)

RATE_SMOOTHING = 0.5  # weight of the newest rate sample


@dataclass
class Outcome:
    """What pushing a plan achieved."""

    acked: dict[int, tuple[int, dict]] = field(default_factory=dict)  # crawler -> (node, status)
    rejected: dict[int, str] = field(default_factory=dict)  # crawler -> reason


class Monitor:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        client: NodeClient,
        detector: FailureDetector,
        routing: str,
        lease_horizon: float,
        clock: Callable[[], float],
        probe_dead_for: float,
    ) -> None:
        self._sessions = sessions
        self._client = client
        self._detector = detector
        self._routing = routing
        self._lease_horizon = lease_horizon
        self._clock = clock
        self._probe_dead_for = probe_dead_for
        self._node_set: frozenset[int] | None = None
        self._samples: dict[int, tuple[int, float]] = {}  # crawler -> (count, at)

    def run_cycle(self) -> None:
        with self._sessions.begin() as session:
            targets, probes = self._targets(session)
            assigned = _assigned_by_node(session)
        reports = poll_all(self._client, [*targets.values(), *probes], assigned)
        for probe in probes:  # a dead node's answer is not a heartbeat: it only fences it
            reports.pop(probe.id, None)
        with self._sessions.begin() as session:
            live = self._record_polls(session, reports, targets)
            wanted = desired_subscribers(session, live, self._routing, self._lease_horizon)
        reported = {node: report.digests() for node, report in reports.items() if report}
        unknown = {node for node, report in reports.items() if report is None}
        held = {c for digests in reported.values() for c in digests}
        held |= {c for node in unknown for c in assigned.get(node, [])}
        outcome = self._execute(plan_reload(wanted, reported), targets)
        with self._sessions.begin() as session:
            confirmed = _confirmed(wanted, reported, outcome)
            _save_assignments(session, wanted, confirmed, unknown)
            _record_states(session, confirmed, held, outcome)

    def _targets(self, session: Session) -> tuple[dict[int, NodeTarget], list[NodeTarget]]:
        """Live nodes to poll, and recently dead ones to probe.

        A node written off while only partitioned may still be crawling. Its probe carries
        the generation it was declared dead in, newer than its own, so as soon as it can be
        reached again it drops everything and registers anew (within one cycle of the heal,
        not after its own detach timer). After `probe_dead_for` it has detached by itself.
        """
        recent = utcnow() - timedelta(seconds=self._probe_dead_for)
        rows = session.execute(
            select(Node.id, Node.url, Node.generation, Node.state).where(
                Node.state.in_(LIVE_NODE_STATES)
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

    # -- record what the nodes said -------------------------------------------------------

    def _record_polls(
        self,
        session: Session,
        reports: dict[int, NodeReport | None],
        targets: dict[int, NodeTarget],
    ) -> list[int]:
        """Update nodes and crawlers from the poll; judge the silent ones. Live node ids."""
        now = self._clock()
        for node_id, report in reports.items():
            node = session.get(Node, node_id)
            if node is None or node.generation != targets[node_id].generation:
                continue  # it registered again meanwhile: judge the new generation next cycle
            if report is not None:
                self._detector.heartbeat(node_id, now)
                node.state = "active"
                node.last_polled_at = utcnow()
                node.subscribers = len(report.subscribers)
                node.data_sources = len(report.data_sources)
                deliveries.record_sources(session, report.data_sources)
                runs = deliveries.known_runs(session, report.subscribers)
                for status in report.subscribers:
                    self._record_status(session, status, now, runs)
                continue
            verdict = self._detector.verdict(node_id, now)
            if verdict is Verdict.DEAD:
                self._declare_dead(session, node)
            elif node.state != (state := _shown_as(verdict)):
                log.warning("node %s node=%s url=%s", state, node.id, node.url)
                node.state = state
        live = sorted(session.scalars(select(Node.id).where(Node.state.in_(LIVE_NODE_STATES))))
        if frozenset(live) != self._node_set:
            log.info("hard reload nodes=%s", live)
            self._node_set = frozenset(live)
        return live

    def _record_status(
        self, session: Session, status: dict, now: float, runs: dict[str, SubscriberRun]
    ) -> None:
        crawler = session.get(Crawler, int(status["crawler_id"]))
        if crawler is None:
            return
        crawler.last_error = status.get("last_error")
        deliveries.record(session, runs, crawler, status)
        if status.get("items_collected") is None:  # the node's store has not answered yet
            return
        count = int(status["items_collected"])
        previous = self._samples.get(crawler.id)
        if previous is not None and now > previous[1]:
            sample = max(0, count - previous[0]) / (now - previous[1])
            crawler.rate = RATE_SMOOTHING * sample + (1 - RATE_SMOOTHING) * crawler.rate
        self._samples[crawler.id] = (count, now)
        crawler.items_collected = count

    def _declare_dead(self, session: Session, node: Node) -> None:
        log.warning("node declared dead node=%s url=%s", node.id, node.url)
        node.state = "dead"
        node.generation += 1  # fences the old generation off (see _targets)
        self._detector.forget(node.id)
        session.execute(delete(Assignment).where(Assignment.node_id == node.id))

    # -- act -------------------------------------------------------------------------------

    def _execute(self, plan: Plan, targets: dict[int, NodeTarget]) -> Outcome:
        outcome = Outcome()
        for node_id, crawler_id in plan.removals:
            try:
                self._client.remove(targets[node_id], crawler_id)
            except (NodeUnreachable, NodeRejected) as error:
                log.info("remove failed node=%s crawler=%s error=%s", node_id, crawler_id, error)
        for node_id, spec in plan.pushes:
            try:
                status = self._client.push(targets[node_id], spec)
                outcome.acked[spec.crawler_id] = (node_id, status)
            except NodeRejected as error:
                outcome.rejected[spec.crawler_id] = str(error)
            except NodeUnreachable as error:
                log.info("push failed node=%s crawler=%s error=%s", node_id, spec.crawler_id, error)
        return outcome


def _shown_as(verdict: Verdict) -> str:
    """The node state a live verdict shows as."""
    return "suspect" if verdict is Verdict.SUSPECT else "active"


def _record_states(
    session: Session, confirmed: dict[int, int], held: set[int], outcome: Outcome
) -> None:
    """Lease confirmations and crawler states, as the nodes now stand."""
    crawlers = list(session.scalars(select(Crawler)))
    for crawler in crawlers:
        if crawler.id in outcome.acked:
            leases.confirm(crawler, outcome.acked[crawler.id][1])
        elif crawler.id not in held:
            leases.release(crawler)
    exhausted = leases.exhausted_users(session, crawlers)
    for crawler in crawlers:
        if crawler.id in outcome.rejected:
            crawler.state, crawler.last_error = "failed", outcome.rejected[crawler.id]
            continue
        running = crawler.id in confirmed
        crawler.state = state_of(facts(crawler, crawler.user_id in exhausted, running))


def _assigned_by_node(session: Session) -> dict[int, list[int]]:
    by_node: dict[int, list[int]] = {}
    for crawler_id, node_id in session.execute(select(Assignment.crawler_id, Assignment.node_id)):
        by_node.setdefault(node_id, []).append(crawler_id)
    return by_node


def _confirmed(
    desired: dict[int, tuple[int, SubscriberSpec]],
    reported: dict[int, dict[int, str]],
    outcome: Outcome,
) -> dict[int, int]:
    """crawler id -> node id, for crawlers now running where routing wants them."""
    confirmed = {c: node for c, (node, _) in outcome.acked.items()}
    for crawler_id, (node_id, spec) in desired.items():
        if reported.get(node_id, {}).get(crawler_id) == spec.digest():
            confirmed[crawler_id] = node_id
    return confirmed


def _save_assignments(
    session: Session,
    desired: dict[int, tuple[int, SubscriberSpec]],
    confirmed: dict[int, int],
    unknown: set[int],
) -> None:
    """Keep an assignment while it is confirmed, or while its node's state is unknown."""
    now = utcnow()
    for assignment in list(session.scalars(select(Assignment))):
        want = desired.get(assignment.crawler_id)
        keep = want is not None and want[0] == assignment.node_id and assignment.node_id in unknown
        if assignment.crawler_id not in confirmed and not keep:
            session.delete(assignment)
    session.flush()
    for crawler_id, node_id in confirmed.items():
        row = session.get(Assignment, crawler_id) or Assignment(crawler_id=crawler_id)
        row.node_id, row.digest, row.pushed_at = node_id, desired[crawler_id][1].digest(), now
        session.add(row)
