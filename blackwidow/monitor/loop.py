"""The monitor's threads in a hub process: keep shard locks, and per led shard a poll
thread on a steady rhythm and a reconcile thread.

Every hub process runs this; each leads its fair share of the shards (the shard count over
the live hub processes), so the control plane grows with the processes. The lock keeper
renews on its own thread, several times per lock lifetime, so neither slow polls nor a long
placement can let a lock lapse; polls never wait for placement work, so a long placement
cannot make nodes miss their polls. A new leader starts with a fresh failure detector,
which gives every node the benefit of the doubt, and full polls, which tell it everything
the nodes run. While the database does not answer, the threads keep trying, and the outage
is one line for all of them (blackwidow.readiness.database_outage), not a traceback a round.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from blackwidow import readiness
from blackwidow.alerts.delivery import delivery_thread
from blackwidow.alerts.events import Emitter
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.core.node_protocol import Shard
from blackwidow.core.outages import Outage
from blackwidow.core.settings import Settings
from blackwidow.models import utcnow
from blackwidow.monitor import holders, leader
from blackwidow.monitor.alerting import PollAlerts
from blackwidow.monitor.detector import PhiAccrualDetector, PhiSettings
from blackwidow.monitor.figures import MonitorFigures
from blackwidow.monitor.liveness import Liveness
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.reconcile import Reconciler
from blackwidow.monitor.routing import Router
from blackwidow.monitor.turns import Turns
from blackwidow.node_client import NodeClient
from sources.backoff import Backoff

log = logging.getLogger(__name__)

RENEWALS_PER_TTL = 4  # a renewal may fail or run late three times before the lock lapses


def phi_settings(settings: Settings) -> PhiSettings:
    """The detector's settings; until a node has answered, polls are expected every interval."""
    return PhiSettings(
        suspect_phi=settings.phi_suspect,
        dead_phi=settings.phi_dead,
        min_std=settings.phi_min_std,
        acceptable_pause=settings.acceptable_pause,
        window=settings.phi_window,
        first_interval=settings.poll_interval,
    )


def lock_ttl(settings: Settings) -> float:
    """A leader that stops renewing is replaced after a few missed polls."""
    return 3 * settings.poll_interval + 1


def lease_after(settings: Settings) -> float:
    """A node's leases lapse after as many missed polls as a leader's lock."""
    return lock_ttl(settings)


# Probes of a dead node go at every poll: a node written off while only cut off may still be
# crawling, and its probe is what fences it once it can be reached (a later probe is a longer
# double run). The probe window ends them; a silent node's polls are one log line, not one each.
PROBE_EVERY_POLL = Backoff(first=0.0, cap=0.0)


def _failed(database: Outage, error: Exception, what: str, shard: Shard | None = None) -> None:
    """A round that raised: the database's outage said once, anything else with its traceback
    (one bad round must not end the thread)."""
    if readiness.is_outage(error):
        database.failed(error)
    elif shard is None:
        log.exception("%s", what)
    else:
        log.exception("%s shard=%s", what, shard)


def shard_halves(
    shard: Shard,
    lead: tuple[str, int],  # the holder, and the epoch it leads the shard in
    sessions: sessionmaker[Session],
    settings: Settings,
    memory: ShardMemory,
    leading: Callable[[], bool],
    figures: MonitorFigures,
    alerts: Emitter,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
    turns: Turns | None = None,
) -> tuple[Liveness, Reconciler]:
    """A led shard's poll and reconcile halves over its memory. The clocks are passed in, so
    a test drives the same halves cycle by cycle in time of its own."""
    client = NodeClient(
        settings.cluster_secret,
        timeout=max(1.0, settings.poll_interval),
        networks=settings.node_networks,
        shard=shard,
    )
    holder, client.epoch = lead
    fence = functools.partial(
        leader.fence, name=leader.lock_name(shard), holder=holder, epoch=client.epoch
    )
    judge = shard.index == 0  # one shard's leader judges nodes for the whole cluster
    detector = PhiAccrualDetector(phi_settings(settings), started_at=clock())
    liveness = Liveness(
        sessions,
        client,
        detector if judge else None,
        memory,
        clock=clock,
        probe_dead_for=2 * settings.detach_after,
        probe_backoff=PROBE_EVERY_POLL,
        leading=leading,
        fence=fence,
        watch=PollAlerts(alerts, settings.source_failing_after, settings.node_holding_items),
        dead_node_retention=settings.dead_node_retention,
        figures=figures,
        wall=wall,
        rate_window=settings.rate_window,
    )
    reconciler = Reconciler(
        sessions,
        client,
        memory,
        Router(settings.routing),
        lease_horizon=3 * settings.poll_interval,
        shard=shard,
        leading=leading,
        fence=fence,
        clock=clock,
        wall=wall,
        figures=figures,
        alerts=alerts,
        turns=turns,
    )
    return liveness, reconciler


class Leadership:
    """One shard this process leads: its memory, its poll and reconcile halves, and the
    reconcile thread. Valid while the lock was renewed within its time to live."""

    def __init__(
        self,
        shard: Shard,
        lead: tuple[str, int],  # the holder, and the epoch it leads the shard in
        asked_at: float,
        sessions: sessionmaker[Session],
        settings: Settings,
        record: Callable[[Leadership, float], None],
        figures: MonitorFigures,
        alerts: Emitter,
        turns: Turns,
    ) -> None:
        self.shard = shard
        self.figures = figures
        self._valid_for = lock_ttl(settings) - 1  # a second short of the lock's expiry
        self.renewed(asked_at)
        self._stopping = threading.Event()
        self._interval = settings.poll_interval
        self._record = record
        self._database = readiness.database_outage(sessions)
        self.memory = ShardMemory(lease_after(settings))
        self.liveness, self.reconciler = shard_halves(
            shard, lead, sessions, settings, self.memory, self.valid, figures, alerts, turns=turns
        )
        self._threads = [
            threading.Thread(target=self._poll, name=f"poll-{shard}", daemon=True),
            threading.Thread(target=self._reconcile, name=f"reconcile-{shard}", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def renewed(self, asked_at: float) -> None:
        """The lock was renewed by a call made at `asked_at` (monotonic)."""
        self._valid_until = asked_at + self._valid_for

    def valid(self) -> bool:
        return not self._stopping.is_set() and time.monotonic() < self._valid_until

    def _poll(self) -> None:
        """Poll every node once per interval (at once again when a poll ran long)."""
        while not self._stopping.is_set():
            started = time.monotonic()
            if self.valid():
                try:
                    self.liveness.poll_once()
                except leader.LeadLost as lost:  # the lock keeper drops the shard next
                    log.warning("poll not recorded shard=%s reason=%s", self.shard, lost)
                except Exception as error:
                    _failed(self._database, error, "poll failed", self.shard)
                self.memory.poll_seconds = time.monotonic() - started
            self._stopping.wait(max(0.0, self._interval - (time.monotonic() - started)))

    def _reconcile(self) -> None:
        while not self._stopping.is_set():
            if not self.memory.polled.wait(self._interval):
                continue
            self.memory.polled.clear()
            if not self.valid():
                continue
            started = time.monotonic()
            try:
                self.reconciler.reconcile_once(dict(self.memory.targets))
                self._record(self, self.memory.poll_seconds + time.monotonic() - started)
            except leader.LeadLost as lost:
                log.warning("pass not recorded shard=%s reason=%s", self.shard, lost)
            except Exception as error:
                _failed(self._database, error, "reconcile failed", self.shard)

    def stop(self) -> None:
        self._stopping.set()
        self.memory.polled.set()
        for thread in self._threads:
            thread.join(timeout=10)


class MonitorLoop(threading.Thread):
    def __init__(
        self, sessions: sessionmaker[Session], settings: Settings, alerts: Emitter
    ) -> None:
        super().__init__(name="monitor", daemon=True)
        self._sessions = sessions
        self._settings = settings
        self._alerts = alerts  # where the shards' leaders put the transitions they see
        # host and pid tell support staff which process leads (GET /api/v1/health)
        self._holder = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._place = holders.here()  # lets a restarted hub take a dead holder's locks
        self._stopping = threading.Event()
        # every process adds and takes the locks in this one order, so two never deadlock
        self._shards = [Shard(i, settings.monitor_shards) for i in range(settings.monitor_shards)]
        self._led: dict[Shard, Leadership] = {}
        self._turns = Turns()  # renewals ahead of the shards' bulk records
        self._lock_ttl = lock_ttl(settings)
        self._renew_interval = self._lock_ttl / RENEWALS_PER_TTL
        self._database = readiness.database_outage(sessions)

    def _lead(self) -> None:
        """Renew the shards led, take free ones up to the fair share, hand back extras.

        Validity counts from before the database was asked, so a slow answer can only
        shorten it. Everything the transaction decided happens after its commit: shards given
        up are stopped, renewals counted, and shards taken start their threads, whose writes
        are fenced by a lock only the commit makes theirs.
        """
        now, asked_at = utcnow(), time.monotonic()
        drops: list[tuple[Shard, str]] = []
        renewed: list[Shard] = []
        taken: list[tuple[Shard, int, MonitorFigures]] = []
        with self._turns.renewal(), self._sessions.begin() as session:
            share = leader.fair_share(
                session, self._holder, now, self._lock_ttl, len(self._shards), self._place
            )
            for shard in self._shards:
                name = leader.lock_name(shard)
                held = shard in self._led
                leading = len(self._led) + len(taken) - len(drops)
                if not held and leading >= share:
                    continue
                if held and leading > share:
                    leader.release(session, self._holder, name)
                    drops.append((shard, "handed over"))
                    continue
                epoch = leader.try_lead(
                    session, self._holder, now, self._lock_ttl, name, self._place
                )
                if epoch is None and held:
                    drops.append((shard, "lost the lead"))
                elif epoch is not None and held:
                    renewed.append(shard)
                elif epoch is not None:
                    saved = MonitorFigures(leader.figures_of(session, name))
                    taken.append((shard, epoch, saved))
        for shard in renewed:
            self._led[shard].renewed(asked_at)
        for shard, epoch, saved in taken:
            log.info("monitor leading shard=%s holder=%s epoch=%s", shard, self._holder, epoch)
            self._led[shard] = Leadership(
                shard,
                (self._holder, epoch),
                asked_at,
                self._sessions,
                self._settings,
                self._record_cycle,
                saved,
                self._alerts,
                self._turns,
            )
        for shard, why in drops:
            self._drop(shard, why)

    def _drop(self, shard: Shard, why: str) -> None:
        """Stop leading a shard; its reconcile thread has ended when this returns."""
        self._led.pop(shard).stop()
        log.warning("monitor %s shard=%s holder=%s", why, shard, self._holder)

    def _record_cycle(self, leadership: Leadership, seconds: float) -> None:
        leadership.figures.cycle(seconds)
        with self._sessions.begin() as session:
            leader.record_cycle(
                session,
                self._holder,
                utcnow(),
                seconds,
                leader.lock_name(leadership.shard),
                leadership.figures.to_json(),
            )

    def run(self) -> None:
        """Keep the locks: take, renew and hand back shards, several times per lifetime,
        from when the database's schema is ready."""
        readiness.await_schema(self._sessions, self._stopping)
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self._lead()
            except Exception as error:  # the locks are renewed next time, or lapse
                _failed(self._database, error, "monitor lock renewal failed")
            self._stopping.wait(max(0.0, self._renew_interval - (time.monotonic() - started)))

    def stop(self) -> None:
        """Stop and hand the locks over at once rather than letting them expire."""
        self._stopping.set()
        self.join(timeout=10)
        led = list(self._led)
        for shard in led:  # before the locks are released: their last writes are fenced by them
            self._led.pop(shard).stop()
        with self._sessions.begin() as session:
            for shard in led:
                leader.release(session, self._holder, leader.lock_name(shard))
            leader.leave(session, self._holder)


def run_alone(sessions: sessionmaker[Session], settings: Settings, alerts: AlertOutbox) -> None:
    """A process that only runs the monitor (`blackwidow monitor`): until SIGTERM or SIGINT,
    then the locks are handed over at once. It delivers the webhook rows its own alerts write
    (the hub processes beside it are not told of them)."""
    stopping = threading.Event()

    def _stop(signum: int, _frame: object) -> None:
        log.info("stopping signal=%s", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    monitor = MonitorLoop(sessions, settings, alerts)
    deliveries = delivery_thread(sessions, settings, alerts)
    monitor.start()
    deliveries.start()
    log.info("monitor started")
    stopping.wait()
    monitor.stop()
    deliveries.stop()
