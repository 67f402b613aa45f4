"""A subscriber's seen-set: a Bloom filter per time segment of the ids its crawler has stored,
so an item the filter has never seen skips the store's "stored already?" read.

A Bloom filter answers "definitely not" or "maybe": a "maybe" still goes to the store (a false
positive costs one read, never an item), and "definitely not" is trusted only while the filter
holds every id the store has for the crawler. Another node may have written ids until it let
the crawler go: a node drops a subscriber the hub stopped polling within orphan_after, so the
filter is loaded from the store only `settle_after` after it is made (the subscriber's attach)
and trusted from then on; until then every id is asked, as without a seen-set. After that the
subscriber is the crawler's one writer, and every id it stores (new or refused as known) goes
into the filter, so a segment that starts later begins with an empty filter that is complete.

Sizing: a filter is made for twice the ids it is loaded with and at least MIN_CAPACITY, at a
FALSE_POSITIVES rate (1%: 9.6 bits an id, 1.2 kB for 1,000 ids, 1.2 MB for a million); past its
capacity the rate would climb, so it is loaded again from the store at twice the size.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from rbloom import Bloom

from sources.segments import version_of

log = logging.getLogger(__name__)

FALSE_POSITIVES = 0.01  # share of unseen ids a filter calls "maybe" (each costs a store read)
MIN_CAPACITY = 1000  # ids a filter is made for at least: 1.2 kB
SEGMENTS_KEPT = 2  # the current segment and the one before, whose held items may still come


class _Filter:
    def __init__(self, ids: Iterable[str], capacity: int = MIN_CAPACITY) -> None:
        ids = list(ids)
        self.capacity = max(capacity, MIN_CAPACITY, 2 * len(ids))
        self.bloom = Bloom(self.capacity, FALSE_POSITIVES)
        self.bloom.update(ids)

    @property
    def full(self) -> bool:
        """Past its capacity, by the filter's own estimate of the ids in it (an id added
        twice counts once)."""
        return self.bloom.approx_items > self.capacity


class SeenSet:
    """One subscriber's filters; its calls come under the subscriber's lock, one at a time."""

    def __init__(
        self,
        read_ids: Callable[[], Iterable[str]],
        settle_after: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read_ids = read_ids  # the store's stored_ids for the crawler
        self._clock = clock
        self._load_at = clock() + settle_after
        self._filters: dict[datetime | None, _Filter] | None = None  # None: not loaded yet
        self._dropped: set[datetime | None] = (
            set()
        )  # segments whose filter went: every id a "maybe"
        self.asked = 0  # ids left to the store's read
        self.vouched = 0  # ids the filter vouched for as new: reads saved

    @property
    def trusted(self) -> bool:
        return self._filters is not None

    def unseen(self, ids: Sequence[str]) -> set[str]:
        """The ids that are definitely not stored: none until the filter is trusted. Loads
        the filter once its time has come (a store read that may raise StoreUnavailable)."""
        if self._filters is None and self._clock() >= self._load_at:
            self._filters = self._load()
        new = set() if self._filters is None else {i for i in ids if not self._maybe(i)}
        self.vouched += len(new)
        self.asked += len(ids) - len(new)
        return new

    def stored(self, ids: Iterable[str]) -> None:
        """These ids are in the store now (stored by this write, or refused as known)."""
        if self._filters is None:
            return
        for item_id in ids:
            version = version_of(item_id)
            if version in self._dropped:
                continue
            kept = self._filters.get(version) or self._new_segment(version)
            kept.bloom.add(item_id)
            if kept.full:
                self._grow(version, 2 * kept.capacity)

    def _maybe(self, item_id: str) -> bool:
        assert self._filters is not None
        version = version_of(item_id)
        kept = self._filters.get(version)
        if kept is None:  # nothing of its segment was stored at load time, nor since, or...
            return version in self._dropped  # ...its filter went: the store must say
        return item_id in kept.bloom

    def _load(self) -> dict[datetime | None, _Filter]:
        by_version: dict[datetime | None, list[str]] = {}
        for item_id in self._read_ids():
            by_version.setdefault(version_of(item_id), []).append(item_id)
        return {version: _Filter(ids) for version, ids in by_version.items()}

    def _grow(self, version: datetime | None, capacity: int) -> None:
        """A full filter loaded again at `capacity`. A read that fails drops the segment's
        filter (its ids are "maybe" from then on) rather than raising: this runs after a
        write, which must not look failed when it stored, or its retry would find the ids
        after this one vouched for as new and count them twice."""
        assert self._filters is not None
        try:
            self._filters[version] = self._reloaded(version, capacity)
        except Exception as error:  # whatever the store raised: the filter only saves reads
            log.warning("seen-set dropped segment=%s error=%s", version, error)
            del self._filters[version]
            self._dropped.add(version)

    def _reloaded(self, version: datetime | None, capacity: int) -> _Filter:
        ids = (i for i in self._read_ids() if version_of(i) == version)
        return _Filter(ids, capacity)

    def _new_segment(self, version: datetime | None) -> _Filter:
        """An empty filter for a segment nothing was stored in at load time; older segments
        past SEGMENTS_KEPT go, as no item of theirs is offered again."""
        assert self._filters is not None
        made = self._filters[version] = _Filter(())
        versions = sorted((v for v in self._filters if v is not None), reverse=True)
        for old in versions[SEGMENTS_KEPT:]:
            del self._filters[old]
            self._dropped.add(old)
        return made
