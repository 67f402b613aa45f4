"""The monitor's intake of crawler changes: keeps a shard's crawlers in memory current.

Every crawler when leading starts (and every RESYNC_INTERVAL after, in case a write ever
failed to record its change), then only those the `crawler_changes` rows name; what polls
taught the monitor (rates, counts) survives a crawler's new configuration.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy.orm import Session

from blackwidow import changes, crawler_keys
from blackwidow.core.node_protocol import Shard
from blackwidow.monitor.memory.crawlers import Tracked, load, recorded_assignments, user_limits
from blackwidow.monitor.memory.shard import ShardMemory

RESYNC_INTERVAL = 600.0  # seconds between full reads of the shard's crawlers


class Intake:
    def __init__(self, memory: ShardMemory, shard: Shard) -> None:
        self._memory = memory
        self._shard = shard
        self.by_user: dict[int, set[int]] = {}  # user id -> their crawlers in this shard
        self.recorded: dict[int, int] = {}  # crawler -> node, as the assignments table says
        self.secrets: dict[int, dict[str, Any]] = {}  # crawler -> stored credential pushed
        self.replaced: set[int] = set()  # crawlers the latest take gave a new configuration
        self._resync_at = 0.0

    def take(self, session: Session, now: float) -> tuple[list[int], bool]:
        """Apply crawler changes (all crawlers, the first time) to memory: the ids of the
        changes taken, and whether every crawler was read afresh. `now` (epoch seconds)
        plans the crawl windows of the crawlers read."""
        memory = self._memory
        if not memory.loaded or time.monotonic() >= self._resync_at:
            return self._load_all(session, now), True
        pending = [row for row in changes.pending(session) if self._shard.owns(row[2])]
        self.replaced = set()
        if not pending:
            return [], False
        ids = {crawler_id for _id, crawler_id, _key in pending}
        fresh = load(session, self._shard, ids)
        users = {c.user_id for c in fresh.values()} | {
            memory.crawlers[c].user_id for c in ids if c in memory.crawlers
        }
        limits = user_limits(session, users)
        secrets = crawler_keys.secrets_for(session, list(fresh.values()))
        with memory.lock:
            for crawler_id in ids:
                self._replace(crawler_id, fresh.get(crawler_id), secrets.get(crawler_id))
                schedule = fresh[crawler_id].schedule if crawler_id in fresh else None
                memory.windows.plan(crawler_id, schedule, now)
            for user_id in users:
                memory.limits.pop(user_id, None)
            memory.limits.update(limits)
            memory.dirty |= ids
        return [change_id for change_id, _c, _key in pending], False

    def _load_all(self, session: Session, now: float) -> list[int]:
        """Read every crawler of the shard: when leading starts, and now and then after, in
        case a write ever missed recording its change. What polls taught is kept."""
        memory = self._memory
        pending = [row for row in changes.pending(session) if self._shard.owns(row[2])]
        crawlers = load(session, self._shard)
        limits = user_limits(session)
        self.recorded = recorded_assignments(session, self._shard)
        self.secrets = crawler_keys.secrets_for(session, list(crawlers.values()))
        with memory.lock:
            for crawler_id, crawler in crawlers.items():
                if (old := memory.crawlers.get(crawler_id)) is not None:
                    crawler.rate, crawler.lost_until = old.rate, old.lost_until
                    crawler.rate_samples = old.rate_samples
                    # a poll may have counted on since SQL was read here
                    crawler.items_collected = max(crawler.items_collected, old.items_collected)
            memory.crawlers, memory.limits, memory.loaded = crawlers, limits, True
            memory.windows.rebuild(((c.id, c.schedule) for c in crawlers.values()), now)
            reported = memory.reported
            memory.dirty |= set(crawlers) | set(self.recorded)
            memory.dirty |= {c for node in reported.nodes() for c in reported.crawlers_on(node)}
        self.by_user = {}
        for crawler in crawlers.values():
            self.by_user.setdefault(crawler.user_id, set()).add(crawler.id)
        self._resync_at = time.monotonic() + RESYNC_INTERVAL
        return [change_id for change_id, _crawler, _key in pending]

    def _replace(self, crawler_id: int, fresh: Tracked | None, secret: dict | None) -> None:
        """Swap in a crawler's new configuration, keeping what the monitor learned of it."""
        crawlers = self._memory.crawlers
        old = crawlers.pop(crawler_id, None)
        if old is not None:
            self.by_user.get(old.user_id, set()).discard(crawler_id)
            self.replaced.add(crawler_id)
        self.secrets.pop(crawler_id, None)
        if fresh is None:
            return
        if old is not None:
            fresh.rate, fresh.lost_until = old.rate, old.lost_until
            fresh.rate_samples = old.rate_samples
            fresh.items_collected = max(fresh.items_collected, old.items_collected)
        crawlers[crawler_id] = fresh
        self.by_user.setdefault(fresh.user_id, set()).add(crawler_id)
        if secret is not None:
            self.secrets[crawler_id] = secret
