"""The leader lock: a row in SQL, so one monitor runs per cluster however many hubs there are.

A holder keeps the lock by renewing it each cycle; when it stops, the lock expires and
another hub process takes over.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, update
from sqlalchemy.orm import Session

from blackwidow.models import MonitorLock

LOCK = "monitor"


def try_lead(session: Session, holder: str, now: datetime, ttl: float) -> bool:
    """Take or renew the lock; True when `holder` leads until now + ttl."""
    result = session.execute(
        update(MonitorLock)
        .where(
            MonitorLock.name == LOCK,
            or_(
                MonitorLock.holder == holder,
                MonitorLock.holder.is_(None),
                MonitorLock.expires_at < now,
            ),
        )
        .values(holder=holder, expires_at=now + timedelta(seconds=ttl))
    )
    return result.rowcount == 1


def release(session: Session, holder: str) -> None:
    session.execute(
        update(MonitorLock)
        .where(MonitorLock.name == LOCK, MonitorLock.holder == holder)
        .values(holder=None, expires_at=None)
    )


def record_cycle(session: Session, holder: str, at: datetime, seconds: float) -> None:
    session.execute(
        update(MonitorLock)
        .where(MonitorLock.name == LOCK, MonitorLock.holder == holder)
        .values(last_cycle_at=at, last_cycle_seconds=seconds)
    )
