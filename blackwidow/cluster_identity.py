"""The cluster's identity: the random id its hub database was made with (migration 0020),
which the hub gives each node that registers so the node scopes its files by it.

A database whose identity row is gone (emptied by hand) gets a new one on first read: it is
a new cluster as far as any node can tell.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow.db import insert_for
from blackwidow.models import ClusterIdentity, utcnow

ROW = 1  # the table's one row


def cluster_id(session: Session) -> str:
    """The id of the cluster this database is; made when missing (every hub agrees on the
    first one written: the row's key is fixed)."""
    found = session.scalar(select(ClusterIdentity.cluster_id).where(ClusterIdentity.id == ROW))
    if found is not None:
        return found
    made = {"id": ROW, "cluster_id": str(uuid.uuid4()), "created_at": utcnow()}
    session.execute(insert_for(session)(ClusterIdentity).values(made).on_conflict_do_nothing())
    return session.scalar(select(ClusterIdentity.cluster_id).where(ClusterIdentity.id == ROW))
