"""A tweet as an item: ids, author from the includes, time as aware UTC, reply links."""

from __future__ import annotations

from datetime import UTC, datetime

from sources.twitter.items import tweet_item, users_by_id

FETCHED_AT = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
USERS = users_by_id([{"id": "42", "username": "ana", "name": "Ana"}, {"id": "7", "name": "Bo"}])


def tweet(**changes) -> dict:
    data = {
        "id": "1790000000000000001",
        "text": "python 3.13 is out",
        "author_id": "42",
        "created_at": "2024-05-01T12:00:00.000Z",
        "conversation_id": "1790000000000000000",
        "referenced_tweets": [{"type": "replied_to", "id": "1790000000000000000"}],
        "lang": "en",
    }
    return {**data, **changes}


def test_a_full_tweet():
    item = tweet_item(tweet(), USERS, FETCHED_AT)

    assert item.id == "1790000000000000001"
    assert item.source == "twitter"
    assert item.text == "python 3.13 is out"
    assert item.author == "ana"
    assert item.url == "https://x.com/ana/status/1790000000000000001"
    assert item.title is None
    assert item.published_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert item.fetched_at == FETCHED_AT
    assert item.conversation_id == "1790000000000000000"
    assert item.in_reply_to == "1790000000000000000"
    assert item.crawler_id is None


def test_created_at_is_aware_utc():
    item = tweet_item(tweet(created_at="2024-05-01T23:59:59.123Z"), USERS, FETCHED_AT)

    assert item.published_at is not None
    assert item.published_at.utcoffset().total_seconds() == 0
    assert item.published_at == datetime(2024, 5, 1, 23, 59, 59, 123000, tzinfo=UTC)


def test_created_at_with_an_offset_is_the_same_instant():
    item = tweet_item(tweet(created_at="2024-05-01T14:00:00+02:00"), USERS, FETCHED_AT)
    assert item.published_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def test_an_unreadable_created_at_is_no_time():
    assert tweet_item(tweet(created_at="yesterday"), USERS, FETCHED_AT).published_at is None


def test_a_numeric_id_becomes_text():
    item = tweet_item(tweet(id=1790000000000000001), USERS, FETCHED_AT)
    assert item.id == "1790000000000000001"
    assert item.url == "https://x.com/ana/status/1790000000000000001"


def test_an_author_missing_from_the_includes_falls_back_to_the_author_id():
    item = tweet_item(tweet(author_id="99"), USERS, FETCHED_AT)

    assert item.author == "99"
    assert item.url == "https://x.com/i/web/status/1790000000000000001"


def test_a_user_without_a_username_falls_back_to_the_author_id():
    assert tweet_item(tweet(author_id="7"), USERS, FETCHED_AT).author == "7"


def test_a_numeric_author_id_finds_its_user():
    assert tweet_item(tweet(author_id=42), USERS, FETCHED_AT).author == "ana"


def test_only_replied_to_is_a_reply():
    references = [
        {"type": "quoted", "id": "100"},
        {"type": "retweeted", "id": "200"},
        {"type": "replied_to", "id": "300"},
    ]
    assert tweet_item(tweet(referenced_tweets=references), USERS, FETCHED_AT).in_reply_to == "300"


def test_quotes_and_retweets_are_not_replies():
    references = [{"type": "quoted", "id": "100"}, {"type": "retweeted", "id": "200"}]
    assert tweet_item(tweet(referenced_tweets=references), USERS, FETCHED_AT).in_reply_to is None


def test_a_tweet_with_only_an_id_and_text():
    item = tweet_item({"id": "5", "text": "hello"}, {}, FETCHED_AT)

    assert (item.id, item.text) == ("5", "hello")
    assert item.author is None
    assert item.url == "https://x.com/i/web/status/5"
    assert item.published_at is None
    assert item.conversation_id is None
    assert item.in_reply_to is None
    assert item.fetched_at == FETCHED_AT


def test_null_references_are_no_reply():
    assert tweet_item(tweet(referenced_tweets=None), USERS, FETCHED_AT).in_reply_to is None


def test_users_by_id_keys_by_text_and_skips_users_without_an_id():
    users = users_by_id([{"id": 42, "username": "ana"}, {"username": "ghost"}])
    assert users == {"42": {"id": 42, "username": "ana"}}
