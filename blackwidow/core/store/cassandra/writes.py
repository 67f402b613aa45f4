"""Which items of a round of writes are new, and where replies go: no I/O.

The Cassandra store reads items_by_id once for all the writes of a round (`Store.add_many`),
then this decides, write by write in their order, what `add` would have answered each had they
been made one after another: an item two writes carry is new to the first only, a reply joins
a parent an earlier write stored, and a conversation an earlier write folded into its root is
looked up there. What the writes then store is written in one round of requests.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from blackwidow.core.store import threads
from blackwidow.core.store.base import Write
from blackwidow.core.store.cassandra.id_write_memory import IdRow
from blackwidow.core.store.cassandra.rows import first_fetch
from sources.model import Item


@dataclass(frozen=True)
class Ttls:
    """A write's retention and id lifetime in seconds (0: none), as CQL's `USING TTL` takes."""

    ttl: int
    id_ttl: int

    @classmethod
    def of(cls, write: Write) -> Ttls:
        return cls(write.ttl or 0, write.id_ttl or 0)


@dataclass
class Round:
    """What a round of writes stores: each write's answer, and the rows behind them."""

    answers: list[list[Item]] = field(default_factory=list)
    new: list[tuple[Item, Ttls]] = field(default_factory=list)  # each new item once
    moves: dict[threads.Key, tuple[str, Ttls]] = field(default_factory=dict)  # to its root


def unique(items: Sequence[Item]) -> list[Item]:
    """The first copy of each item, in the order given: the copy a write stores."""
    first = list({threads.key(item): item for item in reversed(items)}.values())
    first.reverse()
    return first


def decide(
    writes: Sequence[Write], found: Mapping[threads.Key, IdRow], fresh: Collection[threads.Key]
) -> Round:
    """Each write's new items, from the id rows `found` in the store and the keys `fresh` to
    it (IdWriteMemory.new_keys), as if the writes had been stored in their order."""
    decided = Round()
    conversations = {key: row.conversation_id for key, row in found.items()}
    claimed: set[threads.Key] = set()
    for write in writes:
        items = unique(write.items)
        ttls = Ttls.of(write)
        added = [
            (given, first_fetch(item, found.get(threads.key(given))))
            for given, item in zip(items, threads.rooted(items, conversations), strict=True)
            if threads.key(given) in fresh and threads.key(given) not in claimed
        ]
        answer = [item for _, item in added]
        claimed.update(map(threads.key, answer))
        conversations.update((threads.key(item), item.conversation_id) for item in answer)
        for conversation, root in threads.re_roots(added).items():
            _fold(decided.moves, conversations, conversation, root, ttls)
        decided.answers.append(answer)
        decided.new += [(item, ttls) for item in answer]
    return decided


def _fold(
    moves: dict[threads.Key, tuple[str, Ttls]],
    conversations: dict[threads.Key, str | None],
    conversation: threads.Key,
    root: str,
    ttls: Ttls,
) -> None:
    """A conversation moves to its root: so do the items the round knows in it, and the
    conversations an earlier write of the round moved into it (one move, straight there)."""
    crawler, name = conversation
    for key, stored_in in conversations.items():
        if key[0] == crawler and stored_in == name:
            conversations[key] = root
    for source, (target, kept) in moves.items():
        if source[0] == crawler and target == name:
            moves[source] = (root, kept)
    moves[conversation] = (root, ttls)
