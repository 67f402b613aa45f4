"""Hub processes for the model-based test of the monitor: each keeps the real leader locks
in SQL and runs the real poll and reconcile halves of the shards it leads
(blackwidow.monitor.loop.shard_halves), one cycle at a time, on the test's clock.

A hub process is what `MonitorLoop` keeps, without its threads: it announces itself, takes
its fair share of the shards, renews what it leads and hands back extras, and a leadership
whose lock was not renewed in time stops acting.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db
from blackwidow.alerts.outbox import AlertOutbox
from blackwidow.core.node_protocol import Shard, shard_of
from blackwidow.core.settings import Settings
from blackwidow.monitor import leader
from blackwidow.monitor.figures import MonitorFigures
from blackwidow.monitor.loop import lease_after, lock_ttl, shard_halves
from blackwidow.monitor.memory.shard import ShardMemory


class ModelClock:
    """Monotonic seconds the test moves, and the wall clock (epoch seconds) moving with them."""

    def __init__(self, wall_at: float) -> None:
        self.now = 1000.0
        self._offset = wall_at - self.now

    def __call__(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.now + self._offset

    def utc(self) -> datetime:
        return datetime.fromtimestamp(self.wall(), UTC)


class Led:
    """One shard a hub process leads, valid a second short of its lock's expiry."""

    def __init__(
        self,
        shard: Shard,
        lead: tuple[str, int],
        valid_until: float,
        sessions: sessionmaker[Session],
        settings: Settings,
        clock: ModelClock,
    ) -> None:
        self.valid_until = valid_until
        self._clock = clock
        self.memory = ShardMemory(lease_after(settings))
        self.liveness, self.reconciler = shard_halves(
            shard,
            lead,
            sessions,
            settings,
            self.memory,
            self.valid,
            MonitorFigures(),
            AlertOutbox(cluster_hook=False),
            clock=clock,
            wall=clock.wall,
        )

    def valid(self) -> bool:
        return self._clock() < self.valid_until


class ModelHub:
    def __init__(self, name: str, settings: Settings, clock: ModelClock) -> None:
        self.holder = f"model-{name}:{uuid.uuid4().hex[:8]}:{uuid.uuid4().hex[:8]}"
        self._settings = settings
        self._clock = clock
        self._engine = db.make_engine(settings.database_url)
        self.sessions: sessionmaker[Session] = db.make_sessions(self._engine)
        shards = [Shard(i, settings.monitor_shards) for i in range(settings.monitor_shards)]
        start = shard_of(self.holder, len(shards))  # each process from its own starting point
        self._shards = shards[start:] + shards[:start]
        self.led: dict[Shard, Led] = {}
        self._ttl = lock_ttl(settings)

    def keep_locks(self) -> None:
        """One round of MonitorLoop._lead on the test's clock."""
        now, asked_at = self._clock.utc(), self._clock()
        with self.sessions.begin() as session:
            share = leader.fair_share(session, self.holder, now, self._ttl, len(self._shards))
            for shard in self._shards:
                name, held = leader.lock_name(shard), shard in self.led
                if not held and len(self.led) >= share:
                    continue
                if held and len(self.led) > share:
                    leader.release(session, self.holder, name)
                    del self.led[shard]
                    continue
                epoch = leader.try_lead(session, self.holder, now, self._ttl, name)
                if epoch is None:
                    self.led.pop(shard, None)
                elif held:
                    self.led[shard].valid_until = asked_at + self._ttl - 1
                else:
                    valid_until = asked_at + self._ttl - 1
                    lead = (self.holder, epoch)
                    self.led[shard] = Led(
                        shard, lead, valid_until, self.sessions, self._settings, self._clock
                    )

    def cycle(self) -> None:
        """Each led shard: one poll of every node, then one reconcile pass. A leadership
        whose lock another process took meanwhile has its writes refused (leader.fence)."""
        for led in list(self.led.values()):
            if led.valid():
                try:
                    led.liveness.poll_once()
                    led.reconciler.reconcile_once(dict(led.memory.targets))
                except leader.LeadLost:
                    continue

    def stop(self, graceful: bool) -> None:
        """Gone: after a clean stop its locks are free at once, after a crash when they expire."""
        if graceful:
            with self.sessions.begin() as session:
                for shard in self.led:
                    leader.release(session, self.holder, leader.lock_name(shard))
                leader.leave(session, self.holder)
        self.led.clear()
        self._engine.dispose()
