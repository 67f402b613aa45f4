"""The monitor's thread: take the leader lock, run a cycle every poll interval, keep the lock.

Every hub process runs this thread; only the holder of the lock runs cycles. A new leader
starts with a fresh failure detector, which gives every node the benefit of the doubt.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from sqlalchemy.orm import Session, sessionmaker

from blackwidow.models import utcnow
from blackwidow.monitor import leader
from blackwidow.monitor.cycle import Monitor
from blackwidow.monitor.detector import PhiAccrualDetector, PhiSettings
from blackwidow.monitor.node_client import NodeClient
from blackwidow.settings import Settings

log = logging.getLogger(__name__)


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


class MonitorLoop(threading.Thread):
    def __init__(self, sessions: sessionmaker[Session], settings: Settings) -> None:
        super().__init__(name="monitor", daemon=True)
        self._sessions = sessions
        self._settings = settings
        # host and pid tell support staff which process leads (GET /api/v1/health)
        self._holder = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stopping = threading.Event()
        self._monitor: Monitor | None = None
        # a leader that stops renewing is replaced after a few missed cycles
        self._lock_ttl = 3 * settings.poll_interval + 1

    def _new_monitor(self) -> Monitor:
        settings = self._settings
        return Monitor(
            sessions=self._sessions,
            client=NodeClient(
                settings.cluster_secret,
                timeout=max(1.0, settings.poll_interval),
                networks=settings.node_networks,
            ),
            detector=PhiAccrualDetector(phi_settings(settings), started_at=time.monotonic()),
            routing=settings.routing,
            lease_horizon=3 * settings.poll_interval,
            clock=time.monotonic,
            probe_dead_for=2 * settings.detach_after,
        )

    def _lead(self) -> bool:
        with self._sessions.begin() as session:
            leading = leader.try_lead(session, self._holder, utcnow(), self._lock_ttl)
        if leading and self._monitor is None:
            log.info("monitor leading holder=%s", self._holder)
            self._monitor = self._new_monitor()
        elif not leading and self._monitor is not None:
            log.warning("monitor lost the lead holder=%s", self._holder)
            self._monitor = None
        return leading

    def _cycle(self) -> None:
        started = time.monotonic()
        assert self._monitor is not None
        self._monitor.run_cycle()
        with self._sessions.begin() as session:
            leader.record_cycle(session, self._holder, utcnow(), time.monotonic() - started)

    def run(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                if self._lead():
                    self._cycle()
            except Exception:  # one bad cycle must not end the monitor
                log.exception("monitor cycle failed")
            self._stopping.wait(
                max(0.0, self._settings.poll_interval - (time.monotonic() - started))
            )

    def stop(self) -> None:
        """Stop and hand the lock over at once rather than letting it expire."""
        self._stopping.set()
        self.join(timeout=10)
        with self._sessions.begin() as session:
            leader.release(session, self._holder)
