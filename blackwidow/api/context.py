"""What a request handler needs: the hub's dependencies, a transaction and the caller."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flask import current_app, g
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.alerts.events import Emitter
from blackwidow.auth import Caller
from blackwidow.core.queue import ItemQueue
from blackwidow.core.settings import Settings
from blackwidow.core.store import Store
from blackwidow.node_client import NodeClient


@dataclass(frozen=True)
class Hub:
    """The hub's dependencies, built once by create_app and passed down explicitly."""

    settings: Settings
    sessions: sessionmaker[Session]
    store: Store
    nodes: NodeClient  # for what only a node knows, such as its feeds' health
    alerts: Emitter  # events the API sees, such as a dead node registering again
    queue: ItemQueue | None = None  # the nodes' Redis queue, pinged for the health detail


def hub() -> Hub:
    return current_app.extensions["blackwidow"]


@contextmanager
def transaction() -> Iterator[Session]:
    """One transaction per request: committed on success, rolled back on any error."""
    with hub().sessions.begin() as session:
        yield session


def caller() -> Caller:
    """Who is calling, as the gate identified them before the view ran (blackwidow.api.gate)."""
    return g.caller
