"""The run ledger: where a pool writes its runs' latest counts so they outlive the process.

A node killed between two polls would otherwise lose what its runs delivered since the last
poll the hub applied. The pool records each run's counts after every delivered batch (one
call per batch, never per item) and forgets a stopped run once a poll has applied its final
counts; a node restarted at the same address loads what is left as stopped runs
(`DataSourcePool.restore_departed`) and reports them, and the hub, which keeps the highest
count per run, adds only what it had not heard. The durable one lives on the node
(spawn.output.run_ledger); `NO_LEDGER` keeps nothing, for a pool no successor will replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Kind = Literal["source", "subscriber"]


@dataclass(frozen=True)
class RunCounts:
    """A run's counts as a poll would report it once stopped (its departed entry)."""

    kind: Kind
    key: str  # the source key, for the monitor shard that owns it
    run: str
    final: dict[str, Any]  # a data source: described(); a subscriber: crawler_id, run, delivered


class RunLedger(Protocol):
    def record(self, counts: Sequence[RunCounts]) -> None:
        """Keep these runs' counts, replacing what each had (one transaction)."""

    def forget(self, runs: Sequence[str]) -> None:
        """The hub applied these stopped runs' final counts: nothing to replay."""

    def left(self, since: float) -> list[RunCounts]:
        """Every run kept that was recorded at or after `since` (wall-clock seconds), as a
        predecessor left them; older ones are dropped, as the hub may have let them go."""


class NoLedger:
    """Keeps nothing: deliveries after the last applied poll die with the process."""

    def record(self, counts: Sequence[RunCounts]) -> None:
        return None

    def forget(self, runs: Sequence[str]) -> None:
        return None

    def left(self, since: float) -> list[RunCounts]:
        return []


NO_LEDGER = NoLedger()
