"""Sets aside a node's files at its address that belong to another cluster: renamed to
`<name>.other-cluster`, never deleted, never replayed, with one warning line each.

A file written before files named their cluster (`outbox-<address>.db`, `ledger-<address>.db`)
belongs to no cluster a node can tell, so it is set aside too (docs/operations.md "Node files").
"""

from __future__ import annotations

import glob
import logging
import sqlite3
from contextlib import closing
from pathlib import Path

from spawn.output.node_file import CLUSTER_MARK, NodeFileInUse, lock

log = logging.getLogger(__name__)

ASIDE = ".other-cluster"
_COMPANIONS = ("-wal", "-shm")  # SQLite's own files beside a database, named after it


def set_aside(path: Path) -> list[Path]:
    """Set aside every file of `path`'s kind and address whose cluster is not `path`'s; the
    names they were moved to. A file a live process holds is left where it is."""
    cluster = _cluster_of(path)
    moved = []
    for other in others(path):
        try:
            with closing(lock(other)):
                aside = _move(other)
        except NodeFileInUse:
            continue
        log.warning(
            "node file of another cluster set aside path=%s file_cluster=%s cluster=%s moved_to=%s",
            other,
            _cluster_of(other) or "unknown",
            cluster,
            aside.name,
        )
        moved.append(aside)
    return moved


def others(path: Path) -> list[Path]:
    """The files of `path`'s kind and address of other clusters, and the one of no cluster."""
    address = path.name.removesuffix(".db").partition(CLUSTER_MARK)[0]
    unscoped = path.with_name(f"{address}.db")
    found = [unscoped] if unscoped.exists() else []
    scoped = path.parent.glob(f"{glob.escape(address + CLUSTER_MARK)}*.db")
    return found + sorted(other for other in scoped if other != path)


def _cluster_of(path: Path) -> str | None:
    """The cluster a node file's name says it is of; None for a name of no cluster."""
    _, mark, cluster = path.name.removesuffix(".db").partition(CLUSTER_MARK)
    return cluster if mark else None


def _move(path: Path) -> Path:
    """Rename a file and SQLite's companions of it to a free `.other-cluster` name, its
    write-ahead log folded into it first, so the file keeps every commit it had."""
    try:
        with closing(sqlite3.connect(path)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        pass  # not a database we can read: moved as it is, companions and all
    aside, n = Path(f"{path}{ASIDE}"), 1
    while any(Path(f"{aside}{suffix}").exists() for suffix in ("", *_COMPANIONS)):
        n += 1
        aside = Path(f"{path}{ASIDE}-{n}")
    for suffix in (*_COMPANIONS, ""):  # the database last: until then it is complete
        if Path(f"{path}{suffix}").exists():
            Path(f"{path}{suffix}").rename(f"{aside}{suffix}")
    Path(f"{path}.lock").unlink(missing_ok=True)
    return aside
