"""Thread roots: which conversation each reply of a batch joins, and which stored ones move."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from blackwidow.core.store.threads import parent_keys, re_roots, rooted
from sources.model import Item

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


def entry(item_id: str, parent: str | None = None, conversation: str | None = "own") -> Item:
    """An RSS entry: a reply names its parent twice; a root its own id (it has comments)."""
    if conversation == "own":
        conversation = parent or item_id
    return Item(item_id, "rss", None, None, None, None, None, T0, conversation, parent, 1)


def tweet(item_id: str, parent: str, root: str) -> Item:
    return Item(item_id, "twitter", None, None, None, None, None, T0, root, parent, 1)


def conversations(items: list[Item], stored: dict | None = None) -> dict[str, str | None]:
    return {item.id: item.conversation_id for item in rooted(items, stored or {})}


@pytest.mark.parametrize(
    "order",
    [["root", "reply", "deep"], ["deep", "reply", "root"], ["reply", "deep", "root"]],
)
def test_a_thread_in_one_batch_joins_its_root_whatever_the_order(order: list[str]) -> None:
    thread = [entry("root"), entry("reply", "root"), entry("deep", "reply")]
    by_id = {item.id: item for item in thread}
    assert conversations([by_id[name] for name in order]) == dict.fromkeys(order, "root")


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ({(1, "reply"): "root"}, "root"),  # the parent's stored conversation
        ({(1, "reply"): None}, "reply"),  # a parent in no conversation names it
        ({}, "reply"),  # no parent yet: as given
        ({(2, "reply"): "root"}, "reply"),  # another crawler's copy is not this one's parent
    ],
)
def test_a_reply_takes_its_stored_parents_conversation(stored: dict, expected: str) -> None:
    assert conversations([entry("deep", "reply")], stored) == {"deep": expected}


def test_a_stored_parent_wins_over_its_copy_in_the_batch() -> None:
    batch = [entry("reply", "root"), entry("deep", "reply")]
    assert conversations(batch, {(1, "reply"): "older-root"}) == {
        "reply": "root",
        "deep": "older-root",
    }


def test_a_root_without_a_conversation_lends_its_id_to_its_replies() -> None:
    batch = [entry("root", conversation=None), entry("reply", "root"), entry("deep", "reply")]
    assert conversations(batch) == {"root": None, "reply": "root", "deep": "root"}


def test_items_whose_source_knew_the_root_are_left_alone() -> None:
    batch = [tweet("2", parent="1", root="0"), tweet("3", parent="2", root="0")]
    assert conversations(batch, {(1, "1"): "elsewhere", (1, "2"): "elsewhere"}) == {
        "2": "0",
        "3": "0",
    }
    assert parent_keys(batch) == set()


def test_replies_answering_each_other_keep_what_they_were_given() -> None:
    assert conversations([entry("a", "b"), entry("b", "a")]) == {"a": "b", "b": "a"}


def test_a_deep_thread_resolves_without_recursion() -> None:
    chain = [entry("0")] + [entry(str(n), str(n - 1)) for n in range(1, 5000)]
    assert set(conversations(list(reversed(chain))).values()) == {"0"}


def test_parent_keys_are_the_parents_of_replies_only() -> None:
    batch = [entry("root"), entry("reply", "root"), entry("deep", "reply")]
    assert parent_keys(batch) == {(1, "root"), (1, "reply")}


def test_re_roots_fold_the_conversation_a_new_reply_names() -> None:
    given = [entry("root"), entry("reply", "root"), entry("deep", "reply"), tweet("2", "1", "0")]
    done = rooted(given, {(1, "root"): "root"})
    assert re_roots(zip(given, done, strict=True)) == {(1, "reply"): "root", (1, "deep"): "root"}
