"""The Twitter/X data sources against the fake X API, through the real tweepy client.

One stream connection holds every crawler's rules; rules change without reconnecting; the
stream comes back after drops and waits out 429s; searches never fetch a tweet twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
import tweepy

from blackwidow.core.store.sqlite import SqliteStore
from sources.registry import opener
from sources.source_type import SourceContext
from sources.twitter.client import MAX_LINE
from sources.twitter.search import TwitterSearchSource
from sources.twitter.stream import TwitterStreamSource
from spawn.pool.source_pool import DataSourcePool
from tests.component.x_stream import (
    FETCHER,
    RATE_LIMIT_WAIT,
    Running,
    credential,
    rule_values,
    spec,
)
from tests.servers.fake_x import FakeX, route_to
from tests.support import SinkRecorder, wait_until


@pytest.fixture
def x() -> Iterator[FakeX]:
    with FakeX(keepalive=0.05) as fake:
        yield fake


def test_terms_become_tagged_rules_and_tweets_reach_only_the_crawlers_they_matched(x: FakeX):
    with Running(
        x, spec(1, ["Python", "rust"]), spec(2, ["rust", "python"]), spec(3, ["golang"])
    ) as running:
        wait_until(lambda: len(x.rules()) == 2 and x.open_streams() == 1, what="rules and stream")
        assert rule_values(x) == {'("python" OR "rust")', '"golang"'}  # equal terms: one rule
        assert all(rule["tag"].startswith("blackwidow:") for rule in x.rules())
        python = x.publish("I like Python a lot")
        go = x.publish("golang and rust, both")
        x.publish("nothing to see")
        wait_until(lambda: len(running.received()) == 2, what="two tweets delivered")
        assert running.received() == {python: {1, 2}, go: {1, 2, 3}}
    assert x.connections_accepted == 1


def test_items_carry_the_tweet_fields_that_link_a_conversation(x: FakeX):
    with Running(x, spec(1, ["kettle"])) as running:
        wait_until(lambda: x.rules() and x.open_streams() == 1, what="rule and stream")
        root = x.publish("the kettle is on", author="alice")
        reply = x.publish("kettle? tea!", author="bob", in_reply_to=root)
        wait_until(lambda: len(running.received()) == 2, what="both tweets")
    first, second = (batch[0] for batch in running.sink.batches)
    assert (first.id, first.author, first.text) == (root, "alice", "the kettle is on")
    assert first.conversation_id == root and first.in_reply_to is None
    assert first.published_at is not None and first.url == f"https://x.com/alice/status/{root}"
    assert (second.id, second.author, second.in_reply_to) == (reply, "bob", root)
    assert second.conversation_id == root


def test_subscribers_come_and_go_by_their_rules_alone_and_the_stream_stays_up(x: FakeX):
    with Running(x, spec(1, ["alpha"])) as running:
        wait_until(lambda: rule_values(x) == {'"alpha"'} and x.open_streams() == 1, what="alpha")
        alpha_id = x.rules()[0]["id"]
        running.source.attach(spec(2, ["beta"]))
        wait_until(lambda: rule_values(x) == {'"alpha"', '"beta"'}, what="beta added")
        running.source.detach(1)
        wait_until(lambda: rule_values(x) == {'"beta"'}, what="alpha deleted")
        running.source.attach(spec(2, ["gamma"]))  # a changed query replaces its rules
        wait_until(lambda: rule_values(x) == {'"gamma"'}, what="beta replaced")
        beta = x.publish("beta news")
        gamma = x.publish("gamma news")
        wait_until(lambda: gamma in running.received(), what="gamma delivered")
        assert beta not in running.received()
    assert x.connections_accepted == 1
    deleted = [
        body["delete"]["ids"] for method, body in x.rule_requests if "delete" in (body or {})
    ]
    assert [alpha_id] in deleted


def test_rules_left_by_an_earlier_run_are_reconciled_not_duplicated(x: FakeX):
    earlier = tweepy.StreamingClient("test-token")
    route_to(earlier.session, x.url)
    earlier.add_rules(
        [
            tweepy.StreamRule('"alpha"', "blackwidow:0123456789abcdef:0"),  # still wanted
            tweepy.StreamRule('"stale"', "blackwidow:fedcba9876543210:0"),  # no longer
            tweepy.StreamRule("cats", "someone else's"),
        ]
    )
    kept = {rule["value"]: rule["id"] for rule in x.rules()}
    with Running(x, spec(1, ["alpha"])) as running:
        wait_until(
            lambda: '"stale"' not in rule_values(x) and x.open_streams() == 1,
            what="the stale rule deleted, and the stream open",
        )
        assert {rule["value"]: rule["id"] for rule in x.rules()} == {
            '"alpha"': kept['"alpha"'],
            "cats": kept["cats"],
        }
        tweet = x.publish("alpha and cats")
        wait_until(lambda: tweet in running.received(), what="tweet via the kept rule")
        assert running.received()[tweet] == {1}
    assert not [body for method, body in x.rule_requests[1:] if "add" in (body or {})]


def test_a_dropped_stream_reconnects_and_delivers_again(x: FakeX):
    with Running(x, spec(1, ["alpha"])) as running:
        wait_until(lambda: x.rules() and x.open_streams() == 1, what="connected")
        x.drop_streams()
        wait_until(lambda: x.connections_accepted == 2 and x.open_streams() == 1, what="back")
        tweet = x.publish("alpha again")
        wait_until(lambda: tweet in running.received(), what="delivered after the drop")
        wait_until(lambda: running.sink.errors[-1] is None, what="the error cleared")
        assert any("reconnecting" in (error or "") for error in running.sink.errors)


def test_a_429_shows_on_the_status_and_the_next_tries_back_off(x: FakeX):
    x.fail_next_connects(2, 429)
    with Running(x, spec(1, ["alpha"])) as running:
        wait_until(lambda: x.open_streams() == 1, what="connected after two 429s")
        wait_until(lambda: running.sink.errors[-1] is None, what="the error cleared")
    attempts = [at for at, _status in x.connect_times]
    statuses = [status for _at, status in x.connect_times]
    assert statuses[:3] == [429, 429, 200]
    assert attempts[1] - attempts[0] >= RATE_LIMIT_WAIT  # waits double: 0.3 s, then 0.6 s
    assert attempts[2] - attempts[1] >= 2 * RATE_LIMIT_WAIT
    assert "rate limited by X (HTTP 429); retrying in 0.3s" in running.sink.errors


def test_a_refused_credential_shows_on_every_crawler(x: FakeX):
    source = TwitterStreamSource(
        "key", credential(x, bearer_token="wrong"), FETCHER, RATE_LIMIT_WAIT
    )
    sink = SinkRecorder()
    source.attach(spec(1, ["alpha"]))
    source.start(sink)
    try:
        wait_until(
            lambda: any("refused the credential (HTTP 401)" in (e or "") for e in sink.errors),
            what="the auth failure reported",
        )
    finally:
        source.stop()
    assert x.open_streams() == 0


def test_crawlers_beyond_the_apps_rule_cap_are_told_so(x: FakeX):
    with Running(x, spec(1, ["alpha"]), spec(2, ["beta"]), max_rules=1) as running:
        wait_until(lambda: 2 in [to and next(iter(to)) for to in running.sink.error_targets])
        assert rule_values(x) == {'"alpha"'}
        told = dict(
            (next(iter(to)), error)
            for error, to in zip(running.sink.errors, running.sink.error_targets, strict=True)
            if to
        )
        assert told[1] is None
        assert "no room for its rules" in told[2]


def test_long_term_lists_pack_into_few_rules_within_the_length_limit(x: FakeX):
    terms = [f"term{n:03}" for n in range(60)]
    with Running(x, spec(1, terms, languages=["en", "fr"]), max_rule_length=200) as running:
        wait_until(lambda: x.rules(), what="rules")
        values = rule_values(x)
        assert all(len(value) <= 200 for value in values)
        assert len(values) == 5  # 60 quoted terms of 9 characters, 12 to a rule
        tweet = x.publish("about term042 today", lang="fr")
        x.publish("about term042 today", lang="de")
        wait_until(lambda: tweet in running.received(), what="the French tweet")
        assert len(running.received()) == 1


# -- recent search -------------------------------------------------------------------------------


def test_search_polls_with_since_id_and_never_delivers_a_tweet_twice(x: FakeX):
    first = x.publish("search me once")
    x.publish("unrelated")
    source = TwitterSearchSource(
        "key", spec(1, ["search me"], mode="search"), credential(x), FETCHER, 0.1, RATE_LIMIT_WAIT
    )
    sink = SinkRecorder()
    source.start(sink)
    try:
        wait_until(lambda: sink.batches, what="the first poll")
        second = x.publish("search me twice")
        wait_until(lambda: len(sink.batches) == 2, what="the second tweet")
        wait_until(lambda: len(x.searches) >= 4, what="more polls")
    finally:
        source.stop()
    delivered = [item.id for batch in sink.batches for item in batch]
    assert delivered == [first, second]
    assert x.searches[0].since_id is None
    assert {search.since_id for search in x.searches[2:]} == {second}


def test_a_rate_limited_search_says_so_and_resumes(x: FakeX):
    x.rate_limit_searches(1)
    x.publish("limited words")
    source = TwitterSearchSource(
        "key", spec(1, ["limited"], mode="search"), credential(x), FETCHER, 0.1, RATE_LIMIT_WAIT
    )
    sink = SinkRecorder()
    source.start(sink)
    try:
        wait_until(lambda: sink.batches, timeout=10, what="a poll after the reset")
    finally:
        source.stop()
    assert sink.errors[0].startswith("rate limited by X (HTTP 429)")
    assert sink.errors[-1] is None


def test_a_search_re_plans_to_the_every_of_a_subscriber_that_joins(x: FakeX):
    first = spec(1, ["ticking"], mode="search")
    source = TwitterSearchSource("key", first, credential(x), FETCHER, 3600.0, RATE_LIMIT_WAIT)
    sink = SinkRecorder()
    source.attach(first)  # no schedule: the node's interval, an hour here
    source.start(sink)
    try:
        wait_until(lambda: x.searches, what="the first poll")
        source.attach(dataclasses.replace(first, crawler_id=2, schedule={"every": 1}))
        wait_until(lambda: len(x.searches) >= 3, timeout=10, what="polls each second")
    finally:
        source.stop()


# -- in a pool -----------------------------------------------------------------------------------


def test_a_replaced_credential_reconnects_with_the_new_secret(tmp_path):
    with FakeX(tokens=("old-token", "new-token"), keepalive=0.05) as x:
        store = SqliteStore(str(tmp_path / "items.db"))
        context = SourceContext(FETCHER, 1.0, rate_limit_wait=RATE_LIMIT_WAIT)
        pool = DataSourcePool(opener(context), store)
        try:
            first = spec(1, ["alpha"])
            pushed = dataclasses.replace(first, credential=credential(x, bearer_token="old-token"))
            pool.put(pushed, now=0.0)
            pool.put(dataclasses.replace(spec(2, ["beta"]), credential=pushed.credential), 0.0)
            wait_until(lambda: len(x.rules("old-token")) == 2, what="rules on the old app")
            wait_until(lambda: x.open_streams("old-token") == 1, what="the old token's stream")

            rotated = credential(x, bearer_token="new-token")
            pool.put(dataclasses.replace(pushed, credential=rotated), now=1.0)
            wait_until(
                lambda: x.open_streams("new-token") == 1 and x.open_streams("old-token") == 0,
                what="the stream on the new token only",
            )
            wait_until(lambda: len(x.rules("new-token")) == 2, what="both crawlers' rules moved")
            assert [source["subscribers"] for source in pool.data_sources()] == [2]
        finally:
            pool.clear()
            store.close()


def test_a_stopped_stream_frees_the_apps_connection_at_once_not_at_the_next_keepalive():
    with FakeX(keepalive=60.0) as x:  # X's own is 20 s
        with Running(x, spec(1, ["alpha"])):
            wait_until(lambda: x.open_streams() == 1, what="connected")
        wait_until(lambda: x.open_streams() == 0, timeout=10, what="the connection freed")


def test_a_line_past_the_bound_ends_the_connection_and_the_stream_comes_back(x: FakeX):
    with Running(x, spec(1, ["alpha"])) as running:
        wait_until(lambda: x.rules() and x.open_streams() == 1, what="connected")
        x.publish("alpha " + "x" * MAX_LINE)  # no X tweet is near this: a hostile api_base
        wait_until(lambda: x.connections_accepted == 2 and x.open_streams() == 1, what="back")
        after = x.publish("alpha, an ordinary tweet")
        wait_until(lambda: after in running.received(), what="the next tweet")
    assert list(running.received()) == [after]
