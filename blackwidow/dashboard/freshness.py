"""How old the states the pages show are: a node's or a crawler's state is what the monitor
last wrote, so it is only as fresh as the last cycle of the shard that writes it (shard 0's
leader judges the nodes; a crawler's shard is its source key's). Past STALE_CYCLES poll
intervals nobody is updating it, and the pages mark it stale with its age
(`running · as of 71 s ago`) rather than show a green word nobody keeps true."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow.core.node_protocol import Shard, shard_of
from blackwidow.dashboard.display import ago
from blackwidow.models import MonitorLock
from blackwidow.monitor.leader import lock_name

STALE_CYCLES = 5  # poll intervals without a cycle before a state counts as stale


@dataclass(frozen=True)
class Freshness:
    """Each shard's last cycle (by index; None: none yet), judged at `now`. Pure."""

    last_cycles: tuple[datetime | None, ...]
    stale_after: float  # seconds
    now: datetime

    def of_nodes(self) -> str | None:
        """None while shard 0 cycles; else the nodes' states' age: `as of 71 s ago`."""
        return self._age(0)

    def of_crawler(self, source_key: str) -> str | None:
        """None while the crawler's shard cycles; else its state's age."""
        return self._age(shard_of(source_key, len(self.last_cycles)))

    def oldest(self) -> str | None:
        """The stalest shard's age, or None when every shard cycles."""
        if None in self.last_cycles:
            return "no monitor cycle yet"
        cycles = [at for at in self.last_cycles if at is not None]
        return self._age(self.last_cycles.index(min(cycles)))

    def _age(self, shard: int) -> str | None:
        at = self.last_cycles[shard]
        if at is None:
            return "no monitor cycle yet"
        if (self.now - at).total_seconds() <= self.stale_after:
            return None
        return f"as of {ago(at, self.now)}"


def read(session: Session, shards: int, poll_interval: float, now: datetime) -> Freshness:
    """Each shard's last cycle, from its leader lock's row: one small query."""
    names = [lock_name(Shard(index, shards)) for index in range(shards)]
    found = dict(
        session.execute(
            select(MonitorLock.name, MonitorLock.last_cycle_at).where(MonitorLock.name.in_(names))
        ).all()
    )
    cycles = tuple(found.get(name) for name in names)
    return Freshness(cycles, STALE_CYCLES * poll_interval, now)
