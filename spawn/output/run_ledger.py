"""The node's run ledger: each run's latest counts in a SQLite file named by its address and
its cluster.

A node killed between two polls loses what its runs delivered since the last poll the hub
applied; a node restarted at the same host and port for the same cluster finds the file
(spawn.output.node_file), reports what it holds as stopped runs, and the hub adds only what
it had not heard. One row per run, overwritten by each delivered batch and deleted once a
poll applied the stopped run's final counts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from spawn.output.node_file import NodeFile, node_file_path
from spawn.pool.run_counts import RunCounts

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    final TEXT NOT NULL,
    recorded_at REAL NOT NULL
) WITHOUT ROWID
"""


def ledger_path(directory: str, host: str, port: int, pid: int, cluster: str) -> Path:
    """The ledger file of a node in a cluster, beside its queue spool, which a restart at its
    address for that cluster reads."""
    return node_file_path(directory, "ledger", host, port, pid, cluster)


class SqliteLedger:
    """A spawn.pool.run_counts.RunLedger that outlives the process, not the machine: a power
    loss may take the last commits (synchronous=NORMAL)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self._file = NodeFile(path, _SCHEMA)
        self._clock = clock  # wall clock: a successor process reads the times

    def record(self, counts: Sequence[RunCounts]) -> None:
        now = self._clock()
        rows = [(c.run, c.kind, c.key, json.dumps(c.final), now) for c in counts]
        with self._file.guard, self._file.db as db:
            db.executemany("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)", rows)

    def forget(self, runs: Sequence[str]) -> None:
        with self._file.guard, self._file.db as db:
            db.executemany("DELETE FROM runs WHERE run = ?", [(run,) for run in runs])

    def left(self, since: float) -> list[RunCounts]:
        with self._file.guard, self._file.db as db:
            db.execute("DELETE FROM runs WHERE recorded_at < ?", (since,))
            rows = db.execute("SELECT kind, key, run, final FROM runs").fetchall()
        return [RunCounts(kind, key, run, json.loads(final)) for kind, key, run, final in rows]

    def close(self) -> None:
        """Close the file, deleting it when no run is left in it."""
        with self._file.guard:
            (kept,) = self._file.db.execute("SELECT COUNT(*) FROM runs").fetchone()
        self._file.close(empty=kept == 0)
