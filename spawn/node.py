"""A node's own state: its pool, whether it is registered, the cluster it works for, and when
the hub last polled it.

Timers read `time.monotonic()`; nothing here survives a restart, by design (nodes are
stateless: the hub pushes everything again; what the node's files keep is its output's,
spawn.output).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from blackwidow.core.node_protocol import Cursor, Renewal, Shard
from spawn.pool.source_pool import DataSourcePool

log = logging.getLogger(__name__)


class NotJoined(Exception):
    """The hub took the registration, but this node cannot work for its cluster; str() says
    why. The node stays unregistered and tries again."""


class OtherCluster(NotJoined):
    """The hub is of another cluster than the one this node process joined: its files, and
    the stopped runs it still reports, are that cluster's."""

    def __init__(self, joined: str, offered: str) -> None:
        super().__init__(
            f"the hub is of cluster {offered}, this node process works for cluster {joined}:"
            " restart the node to join the hub's"
        )


class NodeState:
    def __init__(
        self,
        pool: DataSourcePool,
        clock: Callable[[], float],
        health: Callable[[], dict[str, Any]] = dict,
        held: Callable[[], int] = lambda: 0,
        load: Callable[[], dict[str, float]] = dict,
        join: Callable[[str], None] = lambda cluster_id: None,
        probe_store: Callable[[], None] = lambda: None,
    ) -> None:
        self.pool = pool
        # asks a store whose last call failed, when no write retries (NodeSink.probe)
        self.probe_store = probe_store
        self.clock = clock
        self.health = health  # what the node's sink says of its store and queue
        self.held = held  # items waiting for a store or queue that is down (polls carry it)
        self.load = load  # CPU and memory in use (spawn.load), which every poll carries
        self._join = join  # opens the node's files of a cluster (spawn.output.opening)
        self.cluster_id: str | None = None  # the hub database's id, from the first registration
        self.node_id: int | None = None
        self.generation: int | None = None  # the hub's fencing number for this registration
        self.last_polled_at = clock()
        self.polls = 0  # polls answered, any shard's: a leaving node counts them (registration)
        self._lock = threading.Lock()
        self.registered = threading.Event()
        # why it is not registered, while it is not (spawn.registration): /readyz says it
        self.registration_problem: str | None = "no answer from the hub yet"
        self._shard_polled_at: dict[Shard, float] = {}  # a shard's poll confirms its subscribers
        self._epochs: dict[Shard, int] = {}  # the newest leader epoch heard, per shard

    def join_cluster(self, cluster_id: str) -> None:
        """Work for the cluster of the node's first registration: its files are opened
        (`join`) before the node takes any hub call. A later registration with a hub of
        another cluster is refused (OtherCluster); NotJoined when the files cannot open."""
        if self.cluster_id is not None:
            if cluster_id != self.cluster_id:
                raise OtherCluster(self.cluster_id, cluster_id)
            return
        self._join(cluster_id)
        self.cluster_id = cluster_id
        log.info("node joined cluster=%s", cluster_id)

    def mark_registered(self, node_id: int, generation: int) -> None:
        with self._lock:
            self.node_id = node_id
            self.generation = generation
            self._epochs.clear()  # a new registration may be with a hub of another database
            self.last_polled_at = self.clock()  # detach_after counts from registration
            self.registration_problem = None
        self.registered.set()
        log.info("node registered node=%s generation=%s", node_id, generation)

    def answer_poll(
        self,
        shard: Shard,
        since: Cursor | None,
        assigned: Iterable[int] | None = None,
        renewal: Renewal | None = None,
    ) -> dict[str, Any]:
        """A poll from one monitor shard: what changed in its subscribers and data sources
        since `since`. The poll confirms every subscriber of the shard (the hub wants what it
        does not remove, and a shard whose leader stops polling leaves orphans behind), or
        only those `assigned` when the hub names them; its `renewal` renews their leases."""
        keys = None if shard.count == 1 else shard.owns
        since = since or Cursor("", 0)  # no stream has an empty name: everything
        changes = self.pool.changes(since.stream, since.seq, keys)
        self._polled(shard, assigned)
        renewals = self.pool.renewals
        if renewal is not None and renewals is not None:
            renewals.renew(shard, renewal.token, renewal.lease_after)
        subscribers, data_sources = self.pool.counts(keys)
        return {
            # the whole node's, whichever shard polls: weighted routing gives a node no new
            # data source once it runs as many as its capacity
            "load": {"data_sources": self.pool.counts()[1], **self.load()},
            "renewal": renewals.token() if renewals is not None else None,
            "cursor": str(Cursor(changes.stream, changes.number)),
            "full": changes.full,
            "subscribers": changes.subscribers,
            "data_sources": changes.data_sources,
            "removed": changes.removed,
            "removed_data_sources": changes.removed_data_sources,
            "departed_data_sources": changes.departed_data_sources,
            "departed_subscribers": changes.departed_subscribers,
            "totals": {
                "subscribers": subscribers,
                "data_sources": data_sources,
                "held": self.held(),
            },
        }

    def _polled(self, shard: Shard, assigned: Iterable[int] | None) -> None:
        now = self.clock()
        with self._lock:
            self.last_polled_at = now
            self.polls += 1
            if assigned is None:
                self._shard_polled_at[shard] = now
        if assigned is not None:
            self.pool.confirm(assigned, now)

    def orphans(self, orphan_after: float) -> list[int]:
        """Subscribers that no poll has wanted for `orphan_after`: neither named by one nor
        of a shard polled since. A subscriber a shard poll still covers is confirmed at that
        poll's time, so it is looked at again only `orphan_after` later."""
        cutoff = self.clock() - orphan_after
        with self._lock:
            polls = [(shard, at) for shard, at in self._shard_polled_at.items() if at >= cutoff]
        orphans: list[int] = []
        confirmed: dict[float, list[int]] = {}
        for crawler_id, key in self.pool.unconfirmed(cutoff):
            at = max((at for shard, at in polls if shard.owns(key)), default=None)
            if at is None:
                orphans.append(crawler_id)
            else:
                confirmed.setdefault(at, []).append(crawler_id)
        for at, crawler_ids in confirmed.items():
            self.pool.confirm(crawler_ids, at)
        return orphans

    def admit_epoch(self, shard: Shard, epoch: int) -> bool:
        """Whether a call from a leader of this epoch may act: a leader that lost its lock
        (an older epoch than one heard already) is refused."""
        with self._lock:
            newest = self._epochs.get(shard, epoch)
            if epoch < newest:
                return False
            self._epochs[shard] = epoch
            return True

    def silent_for(self) -> float:
        with self._lock:
            return self.clock() - self.last_polled_at

    def detach(self, reason: str) -> None:
        """Drop every subscriber, then register again: the hub is gone, or wrote us off."""
        log.warning("node detached node=%s reason=%s", self.node_id, reason)
        with self._lock:
            self.generation = None
            self.registration_problem = f"detached ({reason}), registering again"
        self.registered.clear()
        self.pool.clear()
