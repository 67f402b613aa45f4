"""Deciding a round of writes for the Cassandra store: each write answered as if it had been
made alone after the ones before it, from one read of the ids."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from blackwidow.core.store.base import Write
from blackwidow.core.store.cassandra.id_write_memory import IdRow
from blackwidow.core.store.cassandra.writes import Ttls, decide
from sources.model import Item

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)
WRITER = uuid.UUID(int=1)


def item(
    item_id: str, crawler: int = 1, conversation: str | None = None, parent: str | None = None
) -> Item:
    return Item(item_id, "rss", None, None, None, None, None, T0, conversation, parent, crawler)


def reply(item_id: str, parent: str) -> Item:
    """As an RSS parser gives a reply: its parent named as its conversation."""
    return item(item_id, conversation=parent, parent=parent)


def answered(writes: list[Write], found: dict | None = None) -> list[list[tuple[str, str | None]]]:
    found = found or {}
    keys = {(i.crawler_id, i.id) for write in writes for i in write.items}
    fresh = {key for key in keys if key not in found or found[key].pending}
    return [[(i.id, i.conversation_id) for i in a] for a in decide(writes, found, fresh).answers]


def test_an_item_in_two_writes_is_new_to_the_first_only() -> None:
    writes = [Write([item("a"), item("b")]), Write([item("b"), item("c"), item("c")])]
    assert answered(writes) == [[("a", None), ("b", None)], [("c", None)]]


def test_an_item_stored_before_is_new_to_none_and_a_pending_one_keeps_its_first_fetch() -> None:
    first = T0 - timedelta(hours=1)
    found = {
        (1, "old"): IdRow(None, T0, WRITER, False),
        (1, "half"): IdRow(None, first, None, True),
    }
    decided = decide([Write([item("old")]), Write([item("half")])], found, {(1, "half")})
    assert [[i.id for i in answer] for answer in decided.answers] == [[], ["half"]]
    assert decided.answers[1][0].fetched_at == first


def test_each_new_item_keeps_its_writes_retention() -> None:
    writes = [Write([item("a")], ttl=60), Write([item("b", crawler=2)], ttl=None, id_ttl=3600)]
    decided = decide(writes, {}, {(1, "a"), (2, "b")})
    assert [(i.id, ttls) for i, ttls in decided.new] == [("a", Ttls(60, 0)), ("b", Ttls(0, 3600))]


def test_replies_join_what_earlier_writes_stored_and_folds_go_straight_to_the_root() -> None:
    """A reply to a reply comes first, then its parent, then a reply to it: the first is moved
    to the root with its parent's conversation, in one move, and the last finds the root."""
    writes = [
        Write([reply("deep", "mid")]),
        Write([reply("mid", "root")]),
        Write([reply("late", "deep")]),
    ]
    decided = decide(writes, {}, {(1, "deep"), (1, "mid"), (1, "late")})
    assert [[(i.id, i.conversation_id) for i in a] for a in decided.answers] == [
        [("deep", "mid")],
        [("mid", "root")],
        [("late", "root")],
    ]
    assert {key: root for key, (root, _) in decided.moves.items()} == {
        (1, "deep"): "root",
        (1, "mid"): "root",
        (1, "late"): "root",
    }


def test_a_reply_finds_its_parent_in_the_store() -> None:
    found = {(1, "post"): IdRow("thread", T0, WRITER, False)}
    assert answered([Write([reply("comment", "post")])], found) == [[("comment", "thread")]]
