"""The hub's housekeeping on each back end: what no longer matters goes, nothing else does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db
from blackwidow.models import Node, utcnow
from blackwidow.monitor import pruning

DAY = timedelta(days=1)


@pytest.fixture
def sessions(database_url: str) -> Iterator[sessionmaker[Session]]:
    engine = db.make_engine(database_url)
    yield db.make_sessions(engine)
    engine.dispose()


def test_dead_nodes_go_once_silent_past_retention_and_no_others(sessions):
    now = utcnow()
    long_ago, lately = now - 2 * DAY, now - DAY / 2
    nodes = {
        "dead-long-ago": ("dead", long_ago, long_ago),
        "dead-never-polled": ("dead", long_ago, None),
        "dead-lately": ("dead", long_ago, lately),
        "dead-just-registered": ("dead", lately, None),
        "suspect-long-ago": ("suspect", long_ago, long_ago),
        "active-long-ago": ("active", long_ago, long_ago),
    }
    with sessions.begin() as session:
        for name, (state, registered_at, polled_at) in nodes.items():
            session.add(
                Node(
                    url=f"http://{name}:1",
                    state=state,
                    registered_at=registered_at,
                    last_polled_at=polled_at,
                )
            )

    with sessions.begin() as session:
        assert pruning.forget_dead_nodes(session, now - DAY) == 2

    with sessions() as session:
        left = set(session.scalars(select(Node.url)))
    assert left == {
        f"http://{name}:1" for name in nodes if name not in ("dead-long-ago", "dead-never-polled")
    }
