"""A node's own SQLite file, named by its address and its cluster, locked while its process
runs.

The queue outbox's spool and the run ledger each keep one, so that a node restarted at
the same host and port for the same cluster finds what its killed predecessor left, and two
nodes on one machine never share a file. This module owns the naming, the lock and the
durability settings; the files' tables belong to their users, and what becomes of a file of
another cluster at the address belongs to spawn.output.other_clusters.
"""

from __future__ import annotations

import fcntl
import re
import sqlite3
import threading
from pathlib import Path
from typing import IO

_SAFE = re.compile(r"[^A-Za-z0-9.-]+")
CLUSTER_MARK = "@"  # between a file's address and its cluster: _SAFE never lets one through


class NodeFileInUse(Exception):
    """Another live process holds this node file."""


def node_file_path(directory: str, kind: str, host: str, port: int, pid: int, cluster: str) -> Path:
    """The `kind` file of a node in a cluster (the hub database's id, a UUID): named by its
    address, so a node restarted on the same host and port finds what its predecessor left;
    by process when the port is picked at random (port 0), since no later process would have
    that address again. `cluster` is in the name, so no other cluster's node reads it."""
    where = f"{host}-{port}" if port else f"{host}-pid{pid}"
    return Path(directory) / f"{kind}-{_SAFE.sub('_', where)}{CLUSTER_MARK}{cluster}.db"


def lock(path: Path) -> IO[str]:
    """Hold `path`'s lock file until the returned file is closed; NodeFileInUse when a live
    process holds it."""
    held = open(f"{path}.lock", "a")  # noqa: SIM115 (held while open)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        raise NodeFileInUse(f"{path} is in use by another node process") from None
    return held


class NodeFile:
    """One SQLite connection on a locked file. Commits survive the process (WAL,
    synchronous=NORMAL); a power loss may take the last few, as with the hub's SQLite.
    `guard` serialises the connection's users across threads."""

    def __init__(self, path: Path, schema: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock_file = lock(path)
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(schema)
        self.guard = threading.Lock()

    def close(self, empty: bool) -> None:
        """Close the file, deleting it when nothing is left in it, then let go of the lock."""
        self.db.close()
        if empty:
            for suffix in ("", "-wal", "-shm", ".lock"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._lock_file.close()
