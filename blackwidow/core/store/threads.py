"""Thread roots: the conversation a reply joins when its source named only the reply's parent.

Pure: the stores look parents up for a whole batch, then write what this decides.

The rule: an item whose `conversation_id` equals its `in_reply_to` came from a source that
knew only the parent (an RSS/Atom `thr:in-reply-to`), so it joins the conversation its parent
is stored in (same crawler), or, when the parent is in none, the one named by the parent's id,
which is what it carries already. A source that knows the root (X's own conversation_id)
gives a different id, or, for a direct reply to the root, the same one, which this leaves as
it is: such items are never rewritten. A parent not stored yet leaves the item as given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from sources.model import Item

Key = tuple[int, str]  # (crawler_id, item id)


def key(item: Item) -> Key:
    assert item.crawler_id is not None  # stores check every item on the way in
    return item.crawler_id, item.id


def needs_root(item: Item) -> bool:
    """True when the source named the parent as the conversation: it did not know the root."""
    return item.in_reply_to is not None and item.conversation_id == item.in_reply_to


def parent_keys(items: Iterable[Item]) -> set[Key]:
    """The parents to look up in the store before `rooted` can decide."""
    return {parent for parent in map(_parent, items) if parent is not None}


def _parent(item: Item) -> Key | None:
    """The parent whose conversation the item joins; None when it is not to be rewritten."""
    if item.in_reply_to is None or not needs_root(item):
        return None
    return key(item)[0], item.in_reply_to


def rooted(items: Sequence[Item], stored: Mapping[Key, str | None]) -> list[Item]:
    """The items in order, each reply moved to its thread's root conversation.

    `stored` holds the conversation of every parent found in the store (None: in none). A
    parent stored already wins over a copy of it in the batch (a re-delivery is not stored
    again); a parent only in the batch counts wherever it is listed. Loops keep what was given.
    """
    batch: dict[Key, Item] = {}
    for item in items:
        batch.setdefault(key(item), item)  # the first copy is the one stored
    found: dict[Key, str | None] = {}
    return [_with_conversation(item, _resolve(item, batch, stored, found)) for item in items]


def _resolve(
    start: Item,
    batch: Mapping[Key, Item],
    stored: Mapping[Key, str | None],
    found: dict[Key, str | None],
) -> str | None:
    """Walk up through parents in the batch to one whose conversation is known, then come back
    down: each reply takes its parent's conversation, or its parent's id when that has none."""
    chain: list[Item] = []
    item, on_chain = start, set()
    while True:
        own, parent = key(item), _parent(item)
        if own in found:
            above = found[own]
            break
        if parent is None:
            above = item.conversation_id
            break
        if own in on_chain:  # replies answering each other in a loop keep what they were given
            found.update((key(link), link.conversation_id) for link in chain)
            return start.conversation_id
        chain.append(item)
        on_chain.add(own)
        if parent in stored or parent not in batch:
            above = stored.get(parent)
            break
        item = batch[parent]
    for link in reversed(chain):
        above = above or link.in_reply_to
        found[key(link)] = above
    return above


def _with_conversation(item: Item, conversation_id: str | None) -> Item:
    if conversation_id == item.conversation_id:
        return item
    return dataclasses.replace(item, conversation_id=conversation_id)


def re_roots(stored: Iterable[tuple[Item, Item]]) -> dict[Key, str]:
    """Conversations to fold into their root, from items just stored as (given, rooted) pairs.

    A reply stored before its parent arrived sits in the conversation named by that parent's
    id. When the parent comes, everything the crawler holds in that conversation moves to the
    parent's own: so the result does not depend on the order items arrive in (a node's held
    items, a lease that cuts a feed's newest entries from its older ones, a comment feed
    fetched before the post's). Only items given their parent as conversation (`needs_root`)
    can have such early replies; a tweet's conversation is its root already.
    """
    return {
        key(given): rooted_item.conversation_id
        for given, rooted_item in stored
        if needs_root(given)
        and rooted_item.conversation_id is not None
        and rooted_item.conversation_id != given.id
    }
