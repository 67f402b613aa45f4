"""A Cassandra writer's memory of its id writes: which items are new to a retry, and the
totals its confirms carry."""

from __future__ import annotations

import uuid

import pytest

from blackwidow.core.store.cassandra.id_write_memory import IdRow, IdWriteMemory

ME, THEM = uuid.UUID(int=1), uuid.UUID(int=2)
KEY = (7, "a")
BUCKET = (7, 0)


def ledger(kept: int = 100) -> IdWriteMemory:
    return IdWriteMemory(ME, lambda key: (key[0], 0), kept=kept)


def row(writer: uuid.UUID | None, pending: bool = False) -> IdRow:
    return IdRow(None, None, writer, pending)


@pytest.mark.parametrize(
    ("found", "unanswered", "new"),
    [
        (None, False, True),  # never written
        (row(THEM, pending=True), False, True),  # nobody finished it
        (row(ME, pending=True), True, True),
        (row(ME), True, True),  # our confirm landed, its answer did not: the retry's item
        (row(ME), False, False),  # stored and reported before: a re-delivery
        (row(THEM), True, False),  # another writer finished it
        (row(THEM), False, False),
        (row(None), False, False),  # written before ids named their writer
    ],
)
def test_which_items_are_new(found: IdRow | None, unanswered: bool, new: bool) -> None:
    book = ledger()
    if unanswered:
        book.begin([KEY])
    rows = {} if found is None else {KEY: found}
    assert book.new_keys([KEY], rows) == ({KEY} if new else set())


def test_a_retried_confirm_counts_its_items_once_and_carries_the_unacknowledged() -> None:
    book = ledger()
    book.begin([KEY])
    assert book.confirm(BUCKET, ["a"]) == (["a"], 1)  # not acknowledged: the call raised
    book.begin([(7, "b")])
    assert book.confirm(BUCKET, ["b"]) == (["a", "b"], 2)  # a later write carries it
    assert book.unacked([7]) == {KEY, (7, "b")}
    book.acked(BUCKET, ["a", "b"])
    assert book.confirm(BUCKET, ["a"]) == (["a"], 2)  # the retry of a: counted already
    book.answered([KEY, (7, "b")])
    assert book.unacked([7]) == {KEY}


def test_an_item_another_writer_confirmed_leaves_our_total() -> None:
    book = ledger()
    book.begin([KEY])
    book.confirm(BUCKET, ["a"])
    assert book.new_keys([KEY], {KEY: row(THEM)}) == set()
    assert book.unacked([7]) == set()
    book.begin([(7, "b")])
    assert book.confirm(BUCKET, ["b"]) == (["b"], 1)


def test_our_confirm_read_back_is_acknowledged() -> None:
    book = ledger()
    book.begin([KEY])
    book.confirm(BUCKET, ["a"])
    assert book.new_keys([KEY], {KEY: row(ME)}) == {KEY}
    assert book.unacked([7]) == set()


def test_the_oldest_unanswered_items_are_forgotten_past_the_bound() -> None:
    book = ledger(kept=2)
    book.begin([(7, "a"), (7, "b"), (7, "c")])
    found = {key: row(ME) for key in [(7, "a"), (7, "b"), (7, "c")]}
    assert book.new_keys(found, found) == {(7, "b"), (7, "c")}
