"""A tweet as an item: the API's own ids link replies into conversations natively."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sources.model import Item, parse_utc

# What every request for tweets asks X to include.
TWEET_FIELDS = ["author_id", "created_at", "conversation_id", "referenced_tweets", "lang"]
EXPANSIONS = ["author_id"]
USER_FIELDS = ["username", "name"]


def users_by_id(users: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(user["id"]): user for user in users if "id" in user}


def tweet_item(
    tweet: Mapping[str, Any], users: Mapping[str, Mapping[str, Any]], fetched_at: datetime
) -> Item:
    """An item from a tweet's `data` and the users of its `includes`."""
    tweet_id = str(tweet["id"])
    author_id = tweet.get("author_id")
    username = users.get(str(author_id), {}).get("username") if author_id else None
    replied_to = next(
        (
            str(ref["id"])
            for ref in tweet.get("referenced_tweets") or ()
            if ref.get("type") == "replied_to" and "id" in ref
        ),
        None,
    )
    return Item(
        id=tweet_id,
        source="twitter",
        url=f"https://x.com/{username or 'i/web'}/status/{tweet_id}",
        title=None,
        text=tweet.get("text"),
        author=username or (str(author_id) if author_id else None),
        published_at=parse_utc(tweet.get("created_at")),
        fetched_at=fetched_at,
        conversation_id=tweet.get("conversation_id"),
        in_reply_to=replied_to,
    )
