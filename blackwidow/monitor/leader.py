"""Leader locks: a row in SQL per monitor shard, so one leader runs each shard however many
hub processes there are, and a presence row per hub process, so they share the shards.

A holder keeps a lock by renewing it; when it stops, the lock expires and another hub
process takes over. Each change of hands raises the lock's epoch, which every call to a
node carries: a node refuses a leader older than one it has heard, so a leader that lost
its lock mid-cycle cannot undo its successor's work; and every transaction a leader writes
in checks the epoch in the database itself (`fence`), so none commits after a successor took
over.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, delete, false, or_, select, update
from sqlalchemy.orm import Session

from blackwidow.core.node_protocol import Shard
from blackwidow.db import insert_for
from blackwidow.models import MonitorLock
from blackwidow.monitor import holders

LOCK = "monitor"
PRESENCE = "hub:"  # name prefix of the presence rows of hub processes


def lock_name(shard: Shard) -> str:
    """The unsharded monitor keeps the lock's original name."""
    return LOCK if shard.count == 1 else f"{LOCK}/{shard.index}/{shard.count}"


class LeadLost(Exception):
    """The shard's lock is no longer this holder's at the epoch it leads in."""


def ensure(session: Session, name: str) -> None:
    """Add the lock's row when it is missing. Every process tries the shards in one order
    (MonitorLoop), so two adding rows at once wait for each other rather than deadlock."""
    row = {"name": name, "epoch": 0}
    session.execute(insert_for(session)(MonitorLock).values(row).on_conflict_do_nothing())


def fence(session: Session, name: str, holder: str, epoch: int) -> None:
    """Raise LeadLost unless `holder` still holds the lock at `epoch`, so the leader's
    transaction rolls back. Called last in the transaction: on PostgreSQL it holds the row
    shared to the commit, so a takeover either committed before (and this fails) or waits for
    the commit; on SQLite the transaction holds the write lock by then, so no takeover can
    commit in between (checked first, a read would start a snapshot that a write after
    another hub's commit could not use)."""
    held = session.scalar(
        select(MonitorLock.epoch)
        .where(MonitorLock.name == name, MonitorLock.holder == holder)
        .with_for_update(read=True)
    )
    if held != epoch:
        raise LeadLost(f"lock {name} is no longer held at epoch {epoch}")


def try_lead(
    session: Session,
    holder: str,
    now: datetime,
    ttl: float,
    name: str = LOCK,
    place: str | None = None,
) -> int | None:
    """Take or renew a lock; its epoch when `holder` leads until now + ttl, else None.

    An unexpired lock is taken only from a holder of this `place` whose process has ended
    (a hub restarted on its machine); never from a live one, nor from another place.
    """
    ensure(session, name)
    row = session.get(MonitorLock, name)
    gone = (
        row.holder
        if row is not None and holders.departed(row.holder, row.holder_place, holder, place)
        else None
    )
    result = session.execute(
        update(MonitorLock)
        .where(
            MonitorLock.name == name,
            or_(
                MonitorLock.holder == holder,
                MonitorLock.holder.is_(None),
                MonitorLock.expires_at < now,
                MonitorLock.holder == gone if gone else false(),
            ),
        )
        .values(
            epoch=case(
                (MonitorLock.holder == holder, MonitorLock.epoch), else_=MonitorLock.epoch + 1
            ),
            holder=holder,
            holder_place=place,
            expires_at=now + timedelta(seconds=ttl),
        )
    )
    if result.rowcount != 1:
        return None
    return session.scalar(select(MonitorLock.epoch).where(MonitorLock.name == name))


def release(session: Session, holder: str, name: str = LOCK) -> None:
    session.execute(
        update(MonitorLock)
        .where(MonitorLock.name == name, MonitorLock.holder == holder)
        .values(holder=None, expires_at=None)
    )


def record_cycle(
    session: Session,
    holder: str,
    at: datetime,
    seconds: float,
    name: str = LOCK,
    figures: dict[str, Any] | None = None,
) -> None:
    """The holder's latest cycle, and its figures (blackwidow.monitor.figures) when given."""
    values: dict[str, Any] = {"last_cycle_at": at, "last_cycle_seconds": seconds}
    if figures is not None:
        values["figures"] = figures
    session.execute(
        update(MonitorLock)
        .where(MonitorLock.name == name, MonitorLock.holder == holder)
        .values(**values)
    )


def figures_of(session: Session, name: str) -> dict[str, Any] | None:
    """The figures a lock's previous holders saved, for its new leader to count on from."""
    return session.scalar(select(MonitorLock.figures).where(MonitorLock.name == name))


def fair_share(
    session: Session,
    holder: str,
    now: datetime,
    ttl: float,
    shards: int,
    place: str | None = None,
) -> int:
    """Announce this process and count the live ones: how many shards it should lead.

    Processes of this place that have ended no longer count, expired or not. Only this
    process's own row is waited for: another's stale row is removed unless a transaction
    holds it (a slow hub renewing it late), so two hubs never wait on each other's rows.
    """
    name = presence_name(holder)
    expires_at = now + timedelta(seconds=ttl)
    announce = insert_for(session)(MonitorLock).values(
        name=name, holder=holder, holder_place=place, expires_at=expires_at, epoch=0
    )
    session.execute(
        announce.on_conflict_do_update(
            index_elements=[MonitorLock.name],
            set_={"holder": holder, "holder_place": place, "expires_at": expires_at},
        )
    )
    others = session.execute(
        select(
            MonitorLock.name, MonitorLock.holder, MonitorLock.holder_place, MonitorLock.expires_at
        ).where(MonitorLock.name.startswith(PRESENCE), MonitorLock.name != name)
    ).all()
    stale = [
        row.name
        for row in others
        if row.expires_at is None
        or row.expires_at < now
        or holders.departed(row.holder, row.holder_place, holder, place)
    ]
    if stale:
        free = select(MonitorLock.name).where(MonitorLock.name.in_(stale))
        session.execute(
            delete(MonitorLock).where(MonitorLock.name.in_(free.with_for_update(skip_locked=True)))
        )
    return math.ceil(shards / (1 + len(others) - len(stale)))


def presence_name(holder: str) -> str:
    return f"{PRESENCE}{holder.rsplit(':', 1)[-1]}"


def leave(session: Session, holder: str) -> None:
    session.execute(delete(MonitorLock).where(MonitorLock.name == presence_name(holder)))
