"""The fake X API driven by the real tweepy 4.17 client, routed to it with `route_to`: if tweepy
is happy with the fake's rules, stream and search answers, a client built on tweepy will be."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import tweepy

from tests.servers.fake_x import FakeX, route_to, user_id
from tests.support import wait_until

TOKEN = "test-token"
OTHER_TOKEN = "other-app-token"
STREAM_FIELDS = {
    "tweet_fields": [
        "author_id",
        "created_at",
        "conversation_id",
        "in_reply_to_user_id",
        "referenced_tweets",
        "lang",
    ],
    "expansions": ["author_id", "referenced_tweets.id"],
    "user_fields": ["username"],
}
JOIN_TIMEOUT = 5.0


class Collector(tweepy.StreamingClient):
    """A stream that keeps what it receives, and gives up (instead of backing off for a minute)
    on an HTTP error, so a refused stream ends at once."""

    def __init__(self, fake: FakeX, token: str = TOKEN) -> None:
        super().__init__(token, daemon=True)
        route_to(self.session, fake.url)
        self.responses: list[tweepy.StreamResponse] = []
        self.request_errors: list[int] = []

    def on_response(self, response: tweepy.StreamResponse) -> None:
        self.responses.append(response)

    def on_request_error(self, status_code: int) -> None:
        self.request_errors.append(status_code)
        self.disconnect()

    def texts(self) -> list[str]:
        return [response.data.text for response in self.responses]


@contextlib.contextmanager
def streaming(collector: Collector) -> Iterator[threading.Thread]:
    """Run the collector's filter() in its thread; always disconnect and join it."""
    thread = collector.filter(threaded=True, **STREAM_FIELDS)
    try:
        yield thread
    finally:
        collector.disconnect()
        thread.join(timeout=JOIN_TIMEOUT)
        assert not thread.is_alive(), "the tweepy stream thread did not end"


@pytest.fixture
def fake() -> Iterator[FakeX]:
    with FakeX(tokens={TOKEN, OTHER_TOKEN}, max_rules=5, max_rule_length=40, keepalive=0.1) as x:
        yield x


def _rules_client(fake: FakeX, token: str = TOKEN) -> tweepy.StreamingClient:
    client = tweepy.StreamingClient(token)
    route_to(client.session, fake.url)
    return client


def _client(fake: FakeX, token: str = TOKEN) -> tweepy.Client:
    client = tweepy.Client(token)
    route_to(client.session, fake.url)
    return client


def test_rules_are_added_listed_and_deleted(fake: FakeX) -> None:
    client = _rules_client(fake)

    added = client.add_rules([tweepy.StreamRule("cats", tag="pets"), tweepy.StreamRule("dogs")])
    listed = client.get_rules()
    deleted = client.delete_rules([added.data[1].id, "1"])

    assert [(rule.value, rule.tag) for rule in added.data] == [("cats", "pets"), ("dogs", None)]
    assert all(rule.id.isdigit() and len(rule.id) == 19 for rule in added.data)
    assert int(added.data[0].id) < int(added.data[1].id)
    assert added.meta["summary"] == {"created": 2, "not_created": 0, "valid": 2, "invalid": 0}
    assert listed.data == added.data
    assert listed.meta["result_count"] == 2
    assert deleted.meta["summary"] == {"deleted": 1, "not_deleted": 1}
    assert deleted.errors[0]["parameters"] == {"ids": ["1"]}
    assert fake.rules() == [{"id": added.data[0].id, "value": "cats", "tag": "pets"}]
    assert client.get_rules(ids=[added.data[0].id]).data == added.data[:1]
    assert fake.rule_requests[0] == (
        "POST",
        {"add": [{"value": "cats", "tag": "pets"}, {"value": "dogs"}]},
    )


def test_no_rules_means_no_data(fake: FakeX) -> None:
    answer = _rules_client(fake).get_rules()

    assert answer.data is None
    assert answer.meta["result_count"] == 0


def test_duplicate_invalid_and_long_rules_come_back_as_errors(fake: FakeX) -> None:
    client = _rules_client(fake)
    first = client.add_rules(tweepy.StreamRule("cats")).data[0]

    answer = client.add_rules(
        [
            tweepy.StreamRule("cats"),
            tweepy.StreamRule("birds"),
            tweepy.StreamRule("birds"),
            tweepy.StreamRule('"unclosed'),
            tweepy.StreamRule("(a OR b"),
            tweepy.StreamRule("-only -negations"),
            tweepy.StreamRule("lang:en"),
            tweepy.StreamRule("x" * 41),
            tweepy.StreamRule(""),
        ]
    )

    birds = answer.data[0]
    assert [rule.value for rule in answer.data] == ["birds"]
    titles = [(error["value"], error["title"], error.get("id")) for error in answer.errors]
    assert titles == [
        ("cats", "DuplicateRule", first.id),
        ("birds", "DuplicateRule", birds.id),
        ('"unclosed', "InvalidRule", None),
        ("(a OR b", "InvalidRule", None),
        ("-only -negations", "InvalidRule", None),
        ("lang:en", "InvalidRule", None),
        ("x" * 41, "RuleTooLong", None),
        ("", "InvalidRule", None),
    ]
    assert answer.errors[0]["type"] == "https://api.twitter.com/2/problems/duplicate-rules"
    assert answer.meta["summary"] == {"created": 1, "not_created": 8, "valid": 1, "invalid": 8}
    assert [rule["value"] for rule in fake.rules()] == ["cats", "birds"]


def test_dry_run_validates_without_changing(fake: FakeX) -> None:
    client = _rules_client(fake)

    answer = client.add_rules(tweepy.StreamRule("cats"), dry_run=True)

    assert answer.meta["summary"]["created"] == 1
    assert fake.rules() == []


def test_rule_cap_refuses_the_whole_request(fake: FakeX) -> None:
    client = _rules_client(fake)
    client.add_rules([tweepy.StreamRule(f"word{n}") for n in range(4)])

    with pytest.raises(tweepy.BadRequest) as refused:
        client.add_rules([tweepy.StreamRule("five"), tweepy.StreamRule("six")])

    assert "RulesCapExceeded" in refused.value.response.json()["detail"]
    assert len(fake.rules()) == 4
    assert client.add_rules(tweepy.StreamRule("five")).data[0].value == "five"


def test_rules_belong_to_each_app(fake: FakeX) -> None:
    _rules_client(fake).add_rules(tweepy.StreamRule("cats"))

    assert _rules_client(fake, OTHER_TOKEN).get_rules().data is None
    assert fake.rules(OTHER_TOKEN) == []


def test_stream_delivers_matching_tweets_with_rules_and_includes(fake: FakeX) -> None:
    client = _rules_client(fake)
    rules = client.add_rules([tweepy.StreamRule("cats", tag="pets"), tweepy.StreamRule("cute")])
    fake.publish("cats before anyone listens")
    collector = Collector(fake)

    with streaming(collector):
        wait_until(lambda: fake.open_streams(TOKEN) == 1, timeout=5, what="the stream")
        first = fake.publish("Cute cats!", author="carol", lang="en")
        fake.publish("nothing to see")
        reply = fake.publish("cats again", author="dave", in_reply_to=first)
        wait_until(lambda: len(collector.responses) == 2, timeout=5, what="two tweets")

    tweet, includes, errors, matching = collector.responses[0]
    assert tweet.id == int(first)
    assert tweet.text == "Cute cats!"
    assert tweet.author_id == int(user_id("carol"))
    assert tweet.conversation_id == int(first)
    assert tweet.lang == "en"
    assert tweet.created_at is not None
    assert tweet.referenced_tweets is None
    assert [(user.username, user.name) for user in includes["users"]] == [("carol", "Carol")]
    assert errors == []
    assert {(rule.id, rule.tag) for rule in matching} == {
        (rules.data[0].id, "pets"),
        (rules.data[1].id, ""),
    }
    replied = collector.responses[1]
    assert replied.data.id == int(reply)
    assert replied.data.conversation_id == int(first)
    assert replied.data.in_reply_to_user_id == int(user_id("carol"))
    assert [(ref.type, ref.id) for ref in replied.data.referenced_tweets] == [
        ("replied_to", int(first))
    ]
    assert [t.id for t in replied.includes["tweets"]] == [int(first)]
    assert [rule.id for rule in replied.matching_rules] == [rules.data[0].id]
    assert fake.tweets_streamed == 2
    assert fake.connections_accepted == 1


def test_fields_not_asked_for_are_left_out(fake: FakeX) -> None:
    fake_rules = _rules_client(fake)
    fake_rules.add_rules(tweepy.StreamRule("cats"))

    with requests.get(
        fake.url + "/2/tweets/search/stream",
        headers={"Authorization": f"Bearer {TOKEN}"},
        stream=True,
        timeout=5,
    ) as response:
        wait_until(lambda: fake.open_streams(TOKEN) == 1, timeout=5, what="the stream")
        fake.publish("cats")
        line = next(line for line in response.iter_lines() if line)

    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Transfer-Encoding"] == "chunked"
    message = json.loads(line)
    assert set(message) == {"data", "matching_rules"}
    assert set(message["data"]) == {"id", "text", "edit_history_tweet_ids"}


def test_one_stream_per_app_a_second_is_refused(fake: FakeX) -> None:
    _rules_client(fake).add_rules(tweepy.StreamRule("cats"))
    _rules_client(fake, OTHER_TOKEN).add_rules(tweepy.StreamRule("dogs"))
    first, second, other = Collector(fake), Collector(fake), Collector(fake, OTHER_TOKEN)

    with streaming(first), streaming(other):
        wait_until(lambda: fake.open_streams() == 2, timeout=5, what="both apps' streams")
        with streaming(second) as refused:
            refused.join(timeout=JOIN_TIMEOUT)
        fake.publish("cats and dogs")
        wait_until(lambda: first.responses and other.responses, timeout=5, what="the tweet")

    assert second.request_errors == [429]
    assert fake.connections_refused == 1
    assert fake.connections_accepted == 2
    assert fake.max_open_streams == 1
    assert [status for _, status in fake.connect_times] == [200, 200, 429]
    assert [rule.tag for rule in first.responses[0].matching_rules] == [""]
    assert second.responses == []


def test_dropped_stream_is_reconnected_by_tweepy(fake: FakeX) -> None:
    _rules_client(fake).add_rules(tweepy.StreamRule("cats"))
    collector = Collector(fake)

    with streaming(collector):
        wait_until(lambda: fake.open_streams(TOKEN) == 1, timeout=5, what="the stream")
        fake.drop_streams()
        wait_until(lambda: fake.connections_accepted == 2, timeout=5, what="a reconnection")
        wait_until(lambda: fake.open_streams(TOKEN) == 1, timeout=5, what="the new stream")
        fake.publish("cats after the drop")
        wait_until(lambda: collector.responses, timeout=5, what="the tweet")

    assert collector.texts() == ["cats after the drop"]
    assert fake.connections_refused == 0


def test_a_client_going_away_is_noticed(fake: FakeX) -> None:
    collector = Collector(fake)
    with streaming(collector):
        wait_until(lambda: fake.open_streams(TOKEN) == 1, timeout=5, what="the stream")

    wait_until(lambda: fake.open_streams() == 0, timeout=1, what="the stream to be released")


def test_queued_connect_failures(fake: FakeX) -> None:
    fake.fail_next_connects(1)
    fake.fail_next_connects(1, status=503)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    url = fake.url + "/2/tweets/search/stream"

    limited = requests.get(url, headers=headers, timeout=5)
    unavailable = requests.get(url, headers=headers, timeout=5)
    with requests.get(url, headers=headers, stream=True, timeout=5) as accepted:
        accepted_status = accepted.status_code

    assert limited.status_code == 429
    assert int(limited.headers["x-rate-limit-reset"]) > 0
    assert limited.json()["title"] == "Too Many Requests"
    assert unavailable.status_code == 503
    assert unavailable.json()["title"] == "Service Unavailable"
    assert accepted_status == 200
    assert [status for _, status in fake.connect_times] == [429, 503, 200]
    assert fake.connections_refused == 2


def test_a_stream_whose_client_left_still_counts_for_the_linger() -> None:
    with FakeX(keepalive=0.1, linger=60.0) as fake:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        url = fake.url + "/2/tweets/search/stream"
        with requests.get(url, headers=headers, stream=True, timeout=5) as first:
            assert first.status_code == 200
        wait_until(lambda: fake.open_streams() == 0, timeout=5, what="the client noticed gone")

        refused = requests.get(url, headers=headers, timeout=5)
        lingering = fake.lingering(TOKEN)
        fake.release_lingering()
        with requests.get(url, headers=headers, stream=True, timeout=5) as after:
            accepted_status = after.status_code

    assert refused.status_code == 429
    assert refused.json() == {
        "title": "ConnectionException",
        "detail": "This stream is currently at the maximum allowed connection limit.",
        "connection_issue": "TooManyConnections",
        "type": "https://api.twitter.com/2/problems/streaming-connection",
    }
    assert lingering == 1
    assert accepted_status == 200
    assert [status for _, status in fake.connect_times] == [200, 429, 200]


def test_closing_the_fake_ends_open_streams() -> None:
    with FakeX(keepalive=0.1) as fake:
        response = requests.get(
            fake.url + "/2/tweets/search/stream",
            headers={"Authorization": f"Bearer {TOKEN}"},
            stream=True,
            timeout=5,
        )
        wait_until(lambda: fake.open_streams() == 1, timeout=5, what="the stream")
    with response:
        assert set(response.iter_lines()) <= {b""}  # keep-alives, then a clean end


def _search_all(client: tweepy.Client, query: str, **params: Any) -> list[list[str]]:
    pages, token = [], None
    for _ in range(10):
        answer = client.search_recent_tweets(query, next_token=token, **params)
        pages.append([tweet.text for tweet in answer.data or []])
        token = answer.meta.get("next_token")
        if token is None:
            return pages
    raise AssertionError("more pages than expected")


def test_search_recent_pages_newest_first_after_since_id(fake: FakeX) -> None:
    ids = fake.publish_many([f"cat number {n}" for n in range(25)])
    fake.publish("a dog")
    client = _client(fake)

    pages = _search_all(client, "cat", since_id=ids[2], max_results=10)
    answer = client.search_recent_tweets(
        "cat", max_results=10, expansions=["author_id"], tweet_fields=["created_at"]
    )

    assert pages == [
        [f"cat number {n}" for n in range(24, 14, -1)],
        [f"cat number {n}" for n in range(14, 4, -1)],
        ["cat number 4", "cat number 3"],
    ]
    assert answer.meta["newest_id"] == ids[-1]
    assert answer.meta["oldest_id"] == ids[-10]
    assert answer.meta["result_count"] == 10
    assert answer.includes["users"][0].username == "alice"
    assert answer.data[0].created_at is not None
    searches = fake.searches
    assert [(s.query, s.since_id) for s in searches[:3]] == [("cat", ids[2])] * 3
    assert searches[0].next_token is None
    assert searches[1].next_token is not None


def test_search_with_nothing_found(fake: FakeX) -> None:
    answer = _client(fake).search_recent_tweets("nothing")

    assert answer.data is None
    assert answer.meta == {"result_count": 0}


def test_search_rate_limit(fake: FakeX) -> None:
    fake.publish("cats")
    fake.rate_limit_searches(1)
    client = _client(fake)

    with pytest.raises(tweepy.TooManyRequests) as limited:
        client.search_recent_tweets("cats")

    assert limited.value.reset_time is not None
    assert limited.value.response.headers["x-rate-limit-remaining"] == "0"
    assert [tweet.text for tweet in client.search_recent_tweets("cats").data] == ["cats"]
    assert len(fake.searches) == 2


@pytest.mark.parametrize(
    ("params", "parameter"),
    [({"max_results": 5}, "max_results"), ({"max_results": 101}, "max_results")],
)
def test_search_refuses_bad_parameters(fake: FakeX, params: dict[str, Any], parameter: str) -> None:
    with pytest.raises(tweepy.BadRequest) as refused:
        _client(fake).search_recent_tweets("cats", **params)

    assert parameter in refused.value.response.json()["errors"][0]["parameters"]


def test_search_refuses_an_invalid_query(fake: FakeX) -> None:
    with pytest.raises(tweepy.BadRequest):
        _client(fake).search_recent_tweets("(cats")


def test_a_bad_token_is_unauthorized(fake: FakeX) -> None:
    collector = Collector(fake, "wrong-token")

    with pytest.raises(tweepy.Unauthorized):
        _client(fake, "wrong-token").search_recent_tweets("cats")
    with pytest.raises(tweepy.Unauthorized):
        _rules_client(fake, "wrong-token").get_rules()
    with streaming(collector) as thread:
        thread.join(timeout=JOIN_TIMEOUT)

    assert collector.request_errors == [401]
    assert fake.connections_refused == 1
    assert fake.connections_accepted == 0


CORPUS = {
    "plain": ("I like cats and dogs", "en"),
    "phrase": ("The cat sat on the mat", "en"),
    "loose": ("the mat where a cat sat", "en"),
    "shout": ("CATS EVERYWHERE", "en"),
    "inside": ("concatenate strings", "en"),
    "hashtag": ("Loving the #CatLife today", "en"),
    "mention": ("thanks @catlover", "en"),
    "french": ("les chats et les cats", "fr"),
    "quote": ('he said "meow" loudly', "en"),
}


@pytest.fixture(scope="module")
def corpus() -> Iterator[tuple[tweepy.Client, dict[str, str]]]:
    """A fake with the corpus published once, and each tweet's id to its name."""
    with FakeX() as fake:
        names = {fake.publish(text, lang=lang): name for name, (text, lang) in CORPUS.items()}
        yield _client(fake), names


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("cats", {"plain", "shout", "french"}),
        ("CAT", {"phrase", "loose"}),
        ('"cat sat"', {"phrase", "loose"}),
        ('"sat on the"', {"phrase"}),
        ("sat cat", {"phrase", "loose"}),
        ("cats OR mat", {"plain", "shout", "french", "phrase", "loose"}),
        ("cats -dogs", {"shout", "french"}),
        ("cats -(dogs OR everywhere)", {"french"}),
        ("(cats OR mat) lang:fr", {"french"}),
        ("cats -lang:en", {"french"}),
        ("mat (where OR on) -sat", set()),
        ("sat OR cats dogs", {"phrase", "loose", "plain"}),
        ("#catlife", {"hashtag"}),
        ("catlife", {"hashtag"}),
        ("@catlover", {"mention"}),
        ("catlover", {"mention"}),
        ("concat", set()),
        ('"\\"meow\\""', {"quote"}),
        ("from:alice strings", {"inside"}),
    ],
)
def test_rule_language(
    corpus: tuple[tweepy.Client, dict[str, str]], query: str, expected: set[str]
) -> None:
    client, names = corpus

    answer = client.search_recent_tweets(query, max_results=100)

    assert {names[str(tweet.id)] for tweet in answer.data or []} == expected
