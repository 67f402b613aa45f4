"""The X stream when crawlers leave and when the app's one connection changes hands, against
the fake X API through the real tweepy client.

A crawler's rules leave with it, the last one's too; stopping never waits on X; a connection X
still counts after its client left is waited out in seconds; rules an earlier holder deletes
after the connection changed hands come back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import tweepy

from blackwidow.core.store.sqlite import SqliteStore
from sources.model import SubscriberSpec
from sources.reconnect import RELEASE_RETRY
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.pool.source_pool import DataSourcePool
from tests.component.x_stream import (
    FETCHER,
    RATE_LIMIT_WAIT,
    Running,
    credential,
    our_rule_values,
    rule_values,
    spec,
)
from tests.servers.fake_x import FakeX, route_to
from tests.support import wait_until

GONE_WITHIN = 10.0  # seconds: rules wait for no timer to go, only for X's answers


@pytest.fixture
def x() -> Iterator[FakeX]:
    with FakeX(keepalive=0.05) as fake:
        yield fake


@pytest.fixture
def pool(x: FakeX, tmp_path) -> Iterator[DataSourcePool]:
    """A node's pool with the registry's sources, and the fake X as the credential's api_base."""
    store = SqliteStore(str(tmp_path / "items.db"))
    context = SourceContext(FETCHER, 1.0, rate_limit_wait=RATE_LIMIT_WAIT)
    pool = DataSourcePool(opener(context), store)
    yield pool
    pool.clear()
    store.close()


def pushed(x: FakeX, crawler_id: int, terms: list[str], **fields: Any) -> SubscriberSpec:
    """A spec as the hub pushes it for a crawler of a user's credential on the fake X."""
    return dataclasses.replace(spec(crawler_id, terms), credential=credential(x), **fields)


def rules_client(x: FakeX) -> tweepy.StreamingClient:
    """A client of the same app, as someone else (or another node) would use it."""
    client = tweepy.StreamingClient("test-token")
    route_to(client.session, x.url)
    return client


def add_foreign_rule(x: FakeX, value: str) -> None:
    """A rule someone else put on the same app, without Black Widow's tag."""
    rules_client(x).add_rules(tweepy.StreamRule(value, tag="someone else's"))


def delete_our_rules(x: FakeX) -> None:
    ids = [r["id"] for r in x.rules() if r.get("tag", "").startswith("blackwidow:")]
    rules_client(x).delete_rules(ids)


def test_the_last_crawler_leaving_takes_its_rules_and_leaves_foreign_ones(x, pool):
    add_foreign_rule(x, "cats")
    pool.put(pushed(x, 1, ["alpha"]), now=0.0)
    pool.put(pushed(x, 2, ["beta"]), now=0.0)
    wait_until(
        lambda: our_rule_values(x) == {'"alpha"', '"beta"'} and x.open_streams() == 1,
        what="both crawlers' rules and the stream",
    )

    pool.delete(1)
    wait_until(lambda: our_rule_values(x) == {'"beta"'}, what="the leaving crawler's rule gone")
    pool.delete(2)

    wait_until(lambda: not our_rule_values(x), timeout=GONE_WITHIN, what="the last rule gone")
    wait_until(lambda: x.open_streams() == 0, what="the connection closed")
    assert rule_values(x) == {"cats"}


def test_a_crawler_at_its_limit_keeps_its_rules_until_it_is_removed(x, pool):
    pool.put(pushed(x, 1, ["alpha"], item_limit=2), now=0.0)
    wait_until(lambda: our_rule_values(x) and x.open_streams() == 1, what="rule and stream")
    x.publish_many([f"alpha {n}" for n in range(5)])
    wait_until(lambda: pool.statuses()[0]["state"] == "limit_reached", what="the limit")
    assert our_rule_values(x) == {'"alpha"'}  # the hub removes it; the node does not decide

    pool.delete(1)

    wait_until(lambda: not our_rule_values(x), timeout=GONE_WITHIN, what="its rule gone")


def test_stopping_never_waits_for_x_to_answer(x):
    with Running(x, spec(1, ["alpha"])) as running:
        wait_until(lambda: our_rule_values(x) and x.open_streams() == 1, what="rule and stream")
        asked = len(x.rule_requests)
        with x.holding_rules():
            running.source.detach(1)
            running.source.stop()  # back at once, though X answers nothing meanwhile
            wait_until(lambda: len(x.rule_requests) > asked, what="the last rules call sent")
            assert our_rule_values(x) == {'"alpha"'}
    wait_until(lambda: not our_rule_values(x), timeout=GONE_WITHIN, what="the rule gone")


# -- the app's one connection changing hands ---------------------------------------------------


def test_a_connection_x_still_counts_is_waited_out_in_seconds_not_a_rate_limit_wait():
    with FakeX(keepalive=0.05, linger=1.0) as x:  # X's own: about 20 s
        with Running(x, spec(1, ["alpha"])):  # the earlier holder: a node that then died
            wait_until(lambda: x.open_streams() == 1, what="the earlier holder connected")
        with Running(x, spec(1, ["alpha"]), rate_limit_wait=60.0) as running:
            wait_until(
                lambda: x.open_streams() == 1 and running.sink.errors[-1:] == [None],
                what="connected once X let go, and the error cleared",
            )
    statuses = [status for _at, status in x.connect_times]
    refusals = [e for e in running.sink.errors if e and "TooManyConnections" in e]
    assert statuses[0] == 200 and statuses[-1] == 200 and set(statuses[1:-1]) == {429}
    assert 1 <= len(refusals) == len(statuses) - 2
    assert all(float(e.rsplit(" ", 1)[1].rstrip("s")) <= RELEASE_RETRY + 1 for e in refusals)


def test_rules_an_earlier_holder_deletes_late_come_back_once_the_connection_is_ours():
    with FakeX(keepalive=0.05, linger=60.0) as x:
        with Running(x, spec(1, ["alpha"])):  # the earlier holder, gone but still counted
            wait_until(lambda: x.open_streams() == 1, what="the earlier holder connected")
        with Running(x, spec(1, ["alpha"]), recheck_after=0.2) as running:
            wait_until(
                lambda: (
                    [1] in running.sink.error_targets
                    and 429 in [status for _at, status in x.connect_times]
                ),
                what="the rules reconciled, and the stream refused: X still counts the other",
            )
            delete_our_rules(x)  # the earlier holder's last rules call, landing late
            assert not our_rule_values(x)
            x.release_lingering()

            wait_until(
                lambda: x.open_streams() == 1 and our_rule_values(x) == {'"alpha"'},
                what="connected, and the rule back",
            )
