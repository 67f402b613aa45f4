"""A Cassandra store's counts of a crawler's items: its writers' totals, mended where two
writers overlapped (blackwidow.core.store.cassandra.overlaps) by a recount of its ids.

Each store instance is one writer. It remembers when it first wrote each crawler (written
with its totals, so any reader sees the overlap) and which crawlers it wrote ids of that
never expire: only such a writer recounts, since a recount counts the ids there are and an
expired one (time segments' `id_ttl`) would leave the count.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from cassandra.cluster import Session

from blackwidow.core.store.base import Write
from blackwidow.core.store.cassandra import overlaps
from blackwidow.core.store.cassandra.rows import BUCKETS, Work, crawler_of
from blackwidow.core.store.cassandra.statements import Statements

log = logging.getLogger(__name__)


class Counts:
    def __init__(
        self,
        writer: uuid.UUID,
        settles_after: float,
        lock_of: Callable[[int], threading.Lock],
        run: Callable[[Session, Work], list],
    ) -> None:
        self._writer = writer
        self.settles_after = settles_after  # another writer's last write has landed by then
        self._lock_of = lock_of  # the crawler's lock: this writer's own writes wait meanwhile
        self._run = run
        self._began: dict[int, datetime] = {}
        self._lasting_ids: set[int] = set()
        self._unsettled: set[int] = set()  # crawlers whose last count held an unmended overlap

    def writing(self, writes: Sequence[Write]) -> None:
        """These writes are about to be made (before their crawlers' locks are taken)."""
        now = datetime.now(UTC)
        for write in writes:
            for item in write.items:
                self._began.setdefault(crawler_of(item), now)
                if write.id_ttl is None:
                    self._lasting_ids.add(crawler_of(item))

    def began(self, crawler_id: int) -> datetime:
        """When this writer first wrote the crawler, written with each of its totals."""
        return self._began[crawler_id]

    def count(self, session: Session, st: Statements, crawler_id: int) -> int:
        """The writers' totals in every bucket, and those written before schema version 3;
        recounted first where two writers may both have counted one item."""
        legacy, totals = self._totals(session, st, crawler_id)
        if self._recount_due(crawler_id, totals) is None:
            self._note(crawler_id, totals)
            return legacy + totals.counted
        with self._lock_of(crawler_id):
            return self._recount(session, st, crawler_id)

    def unsettled(self, crawler_id: int) -> bool:
        """Whether the last count of the crawler here held two writers' overlap that a later
        count will mend (never for a crawler whose ids expire: nothing mends those)."""
        return crawler_id in self._unsettled

    def _note(self, crawler_id: int, totals: overlaps.Totals) -> None:
        lasting = crawler_id in self._lasting_ids
        if lasting and overlaps.unmended(totals, self.settles_after) is not None:
            self._unsettled.add(crawler_id)
        else:
            self._unsettled.discard(crawler_id)

    def _totals(
        self, session: Session, st: Statements, crawler_id: int
    ) -> tuple[int, overlaps.Totals]:
        legacy = sum(row.stored for row in session.execute(st.totals, (crawler_id,)))
        rows = session.execute(st.bucket_totals, (crawler_id, list(range(BUCKETS))))
        return legacy, overlaps.read(rows)

    def _recount_due(self, crawler_id: int, totals: overlaps.Totals) -> float | None:
        if crawler_id not in self._lasting_ids:
            return None
        return overlaps.recount_due(totals, self._writer, time.time(), self.settles_after)

    def _recount(self, session: Session, st: Statements, crawler_id: int) -> int:
        """Count the crawler's distinct confirmed ids, and write what the totals are over
        (or under) by as RECOUNTED's total: the count is then that of distinct items."""
        buckets = range(BUCKETS)
        reads: Work = [(st.bucket_id_count, (crawler_id, bucket)) for bucket in buckets]
        reads += [(st.bucket_pending_count, (crawler_id, bucket)) for bucket in buckets]
        found = [result.one().found for result in self._run(session, reads)]
        distinct = sum(found[:BUCKETS]) - sum(found[BUCKETS:])
        legacy, totals = self._totals(session, st, crawler_id)  # read after the ids
        through = self._recount_due(crawler_id, totals)
        if through is None:  # another writer wrote meanwhile: next time
            self._note(crawler_id, totals)
            return legacy + totals.counted
        was = legacy + totals.counted
        correction = distinct - (was - totals.correction)
        at = datetime.fromtimestamp(math.ceil(through * 1000) / 1000, UTC)  # timestamps: ms
        session.execute(st.set_bucket_total, (correction, at, crawler_id, 0, overlaps.RECOUNTED))
        log.info("count recounted crawler=%s distinct=%s was=%s", crawler_id, distinct, was)
        self._unsettled.discard(crawler_id)
        return distinct
