"""The outbox's spool: queue entries kept in a SQLite file on the node until Redis has them.

A node killed while Redis is down would otherwise lose the entries of items it had stored:
the items stay in the store, but downstream never hears of them. One file per node process
and cluster (`spool_path`), locked while open, so two nodes on one machine never share
entries (spawn.output.node_file), and no cluster's queue gets another's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from blackwidow.core.queue.entries import entry_fields, item_from_entry
from sources.model import Item
from spawn.output.node_file import NodeFile, NodeFileInUse, node_file_path

# `stored` is 0 for an entry written before the store was asked (the store's answer decides
# whether it is kept), 1 for an item the store took as new: it waits only for the queue.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    fields TEXT NOT NULL,
    ttl INTEGER,
    stored INTEGER NOT NULL
)
"""
SpoolInUse = NodeFileInUse  # another live process holds this spool file


@dataclass(frozen=True)
class SpooledEntry:
    seq: int
    item: Item
    ttl: int | None


def spool_path(directory: str, host: str, port: int, pid: int, cluster: str) -> Path:
    """The spool file of a node in a cluster, which a node restarted at its address for
    that cluster replays."""
    return node_file_path(directory, "outbox", host, port, pid, cluster)


class Spool:
    """Entries in order of `seq`, as durable as their node file (a power loss may take the
    last few commits)."""

    def __init__(self, path: Path) -> None:
        self._file = NodeFile(path, _SCHEMA)
        self._db, self._guard = self._file.db, self._file.guard

    def add(self, items: Sequence[Item], ttl: int | None, stored: bool) -> list[int]:
        """Write entries in one transaction; their seqs, in the items' order."""
        rows = [(json.dumps(entry_fields(item)), ttl, int(stored)) for item in items]
        with self._guard, self._db:
            return [
                self._db.execute(
                    "INSERT INTO entries (fields, ttl, stored) VALUES (?, ?, ?)", row
                ).lastrowid
                for row in rows
            ]

    def settle(self, kept: Sequence[int], dropped: Sequence[int]) -> None:
        """In one transaction: `kept` entries now wait only for the queue; `dropped` go."""
        with self._guard, self._db:
            self._db.executemany("UPDATE entries SET stored = 1 WHERE seq = ?", _rows(kept))
            self._db.executemany("DELETE FROM entries WHERE seq = ?", _rows(dropped))

    def remove(self, seqs: Sequence[int]) -> None:
        with self._guard, self._db:
            self._db.executemany("DELETE FROM entries WHERE seq = ?", _rows(seqs))

    def head(self, limit: int) -> list[SpooledEntry]:
        """The oldest stored entries, at most `limit`."""
        return self._select("WHERE stored = 1 ORDER BY seq LIMIT ?", (limit,))

    def unsettled(self) -> list[SpooledEntry]:
        """Entries whose store write had not answered when their process ended."""
        return self._select("WHERE stored = 0 ORDER BY seq", ())

    def counts(self) -> tuple[int, int]:
        """(all entries, stored entries)."""
        with self._guard:
            total, stored = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(stored), 0) FROM entries"
            ).fetchone()
        return total, stored

    def close(self) -> None:
        """Close the file, and delete it when nothing is left in it."""
        self._file.close(empty=self.counts()[0] == 0)

    def _select(self, where: str, parameters: tuple[int, ...]) -> list[SpooledEntry]:
        with self._guard:
            rows = self._db.execute(
                f"SELECT seq, fields, ttl FROM entries {where}", parameters
            ).fetchall()
        return [
            SpooledEntry(seq, item_from_entry(json.loads(fields)), ttl) for seq, fields, ttl in rows
        ]


def _rows(seqs: Sequence[int]) -> list[tuple[int]]:
    return [(seq,) for seq in seqs]
