"""Turns at SQLite's write lock in a monitor process: a lock renewal asked for while the
reconciler records a big placement goes ahead of the rest of that record, rather than
waiting behind it (blackwidow.monitor.turns). Ordered by the turns, not by timing."""

from __future__ import annotations

import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert
from sqlalchemy.orm import Session

from blackwidow import db
from blackwidow.models import Crawler, Node, User
from blackwidow.monitor import leader
from blackwidow.monitor.memory.crawlers import save_assignments
from blackwidow.monitor.turns import Turns, in_parts, record_in_turns
from tests.support import wait_until

CRAWLERS = 6_000


def seeded(template: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Sessions on a copy of the migrated template holding a node and CRAWLERS crawlers."""
    path = tmp_path / "hub.db"
    shutil.copy(template, path)
    sessions = db.make_sessions(db.make_engine(f"sqlite:///{path}", busy_timeout=60.0))
    with sessions.begin() as session:
        session.execute(insert(User), [{"name": "ana", "token_hash": "x"}])
        session.execute(
            insert(Node), [{"url": "http://n", "capacity": 1, "state": "active", "generation": 0}]
        )
        crawler = {"user_id": 1, "source": "rss", "query": {}, "enabled": True}
        crawler |= {"state": "pending", "items_collected": 0, "items_delivered": 0}
        rows = [{**crawler, "uuid": f"key-{n}", "name": f"c{n}"} for n in range(CRAWLERS)]
        session.execute(insert(Crawler), rows)
    return sessions


def test_a_renewal_goes_ahead_of_the_rest_of_a_big_placement_record(sqlite_template, tmp_path):
    sessions = seeded(sqlite_template, tmp_path)
    turns = Turns()
    order: list[str] = []
    renewing = threading.Event()
    epochs: list[int | None] = []

    def keeper() -> None:  # as MonitorLoop._lead renews
        with turns.renewal():
            renewing.set()
            with sessions.begin() as session:
                epochs.append(leader.try_lead(session, "keeper", datetime.now(UTC), 7.0))
        order.append("renewed")

    renewal = threading.Thread(target=keeper)
    parts = in_parts(range(1, CRAWLERS + 1))

    def part(n: int, ids: list[int]):  # type: ignore[no-untyped-def]
        def run(session: Session) -> None:
            order.append(f"part {n}")
            save_assignments(session, {c: (1, "digest") for c in ids}, ())
            if n == 0:  # the write lock is held: the keeper asks for it now
                renewal.start()
                wait_until(renewing.is_set, timeout=30, what="the renewal to be asked for")

        return run

    record_in_turns(
        sessions, turns, [part(n, ids) for n, ids in enumerate(parts)], lambda session: None
    )
    renewal.join(timeout=60)
    assert epochs == [1]
    assert order.index("renewed") < order.index(f"part {len(parts) - 1}"), order
