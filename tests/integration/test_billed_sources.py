"""Billed sources end to end: hub and three nodes as processes, the fake X API and the fake paid
stream in this process, real tweepy and requests on the nodes talking to them over loopback.

What is asserted: one stream connection per credential in the whole cluster, limits that are
exact under a fast stream (overshoot 0), rules that change without a reconnect, reconnects
after a drop and backoff after 429s, and delivered versus stored counts.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import Cluster
from tests.servers.fake_paid_stream import FakePaidStream
from tests.servers.fake_x import FakeX
from tests.summary import FAULT_TOTALS, MEASUREMENTS
from tests.support import wait_until

RATE_LIMIT_WAIT = 0.5
NODE_TOKEN = "node-bearer-7f3a9c"  # the nodes' own app, from BLACKWIDOW_CREDENTIALS
USER_TOKEN = "user-bearer-51d2e8"  # an app of the user's own, stored on the hub


@pytest.fixture
def x() -> Iterator[FakeX]:
    with FakeX(tokens=(NODE_TOKEN, USER_TOKEN), keepalive=0.1) as fake:
        yield fake


@pytest.fixture
def paid() -> Iterator[FakePaidStream]:
    with FakePaidStream(keepalive=0.1) as fake:
        yield fake


def start(cluster: Any, x: FakeX, paid: FakePaidStream, nodes: int = 3) -> Cluster:
    credentials = {
        "twitter": {"default": {"bearer_token": NODE_TOKEN, "api_base": x.url}},
        "datasift": {"default": {"endpoint": f"{paid.url}/stream", "auth_value": paid.secret}},
    }
    return cluster(
        nodes,
        BLACKWIDOW_CREDENTIALS=json.dumps(credentials),
        BLACKWIDOW_RATE_LIMIT_WAIT=str(RATE_LIMIT_WAIT),
        BLACKWIDOW_SEARCH_INTERVAL="0.3",
    )


def states(c: Cluster, token: str, ids: list[int]) -> list[str]:
    return [c.get(token, crawler_id)["state"] for crawler_id in ids]


def stored(c: Cluster, token: str, ids: list[int]) -> list[int]:
    """Items in the store, read back through the API (not the monitor's counters)."""
    return [len(c.items(token, crawler_id)) for crawler_id in ids]


def wait_states(c: Cluster, token: str, ids: list[int], state: str, what: str) -> None:
    wait_until(lambda: set(states(c, token, ids)) == {state}, timeout=60, what=what)


def user_id(c: Cluster, token: str) -> int:
    return c.call("GET", "/api/v1/crawlers", token).json()[0]["user_id"]


# Overlapping terms: crawlers 0-4 all say "alpha"; 1 and 2 are equal (one shared rule).
TERMS = [
    ["alpha"],
    ["alpha", "beta"],
    ["Beta", "alpha"],
    ["alpha", "gamma"],
    ["delta", "alpha", "gamma"],
    ["beta"],
    ["gamma"],
    ["delta", "epsilon"],
    ["epsilon"],
    ["beta", "epsilon"],
]
CRAWLER_LIMIT = 20
USER_LIMIT = 200
RAISED_LIMIT = 260


def test_ten_streaming_crawlers_share_one_connection_and_stop_exactly(cluster, x, paid):
    c = start(cluster, x, paid)
    token = c.user(item_limit=USER_LIMIT)
    ids = [
        c.create(
            token,
            "twitter",
            {"terms": terms},
            item_limit=CRAWLER_LIMIT if n < 5 else None,
        )["id"]
        for n, terms in enumerate(TERMS)
    ]
    wait_states(c, token, ids, "running", "ten crawlers running")
    assert len({c.get(token, i)["node_id"] for i in ids}) == 1  # the credential is the key
    wait_until(
        lambda: len(x.rules(NODE_TOKEN)) == 9 and x.open_streams() == 1, what="9 rules, 1 stream"
    )

    # Phase 1: "alpha" reaches crawlers 0-4 only, and each stops at exactly its own limit.
    x.publish_many([f"alpha news {n}" for n in range(100)])
    wait_states(c, token, ids[:5], "limit_reached", "crawlers 0-4 at their limits")
    assert stored(c, token, ids) == [CRAWLER_LIMIT] * 5 + [0] * 5
    # The hub removed them, so their rules went; the stream stayed connected.
    wait_until(lambda: len(x.rules(NODE_TOKEN)) == 5, what="the stopped crawlers' rules deleted")
    assert x.connections_accepted == 1  # rules changed under the open connection

    # Phase 2: a fast burst reaching crawlers 5-9 spends the user's budget to the item.
    x.publish_many([f"beta gamma delta epsilon {n}" for n in range(1000)])
    wait_states(c, token, ids, "limit_reached", "the user's budget spent")
    spent = stored(c, token, ids)
    assert sum(spent) == USER_LIMIT
    assert all(count <= CRAWLER_LIMIT for count in spent[:5])
    # The hub removed every crawler, so the last one's rules went with the stream.
    wait_until(lambda: not x.rules(NODE_TOKEN), what="no rule left on the app")

    # Raising the user's limit resumes the crawlers that still have room.
    patched = c.call(
        "PATCH",
        f"/api/v1/users/{user_id(c, token)}",
        c.admin_token,
        json={"item_limit": RAISED_LIMIT},
    )
    assert patched.status_code == 200, patched.text
    wait_states(c, token, ids[5:], "running", "crawlers 5-9 running again")
    wait_until(
        lambda: x.open_streams() == 1 and len(x.rules(NODE_TOKEN)) == 5, what="their rules back"
    )
    x.publish_many([f"epsilon beta gamma again {n}" for n in range(1000)])
    wait_states(c, token, ids, "limit_reached", "the raised budget spent")
    final = stored(c, token, ids)
    assert sum(final) == RAISED_LIMIT

    usage = wait_until(
        lambda: (
            (u := c.call("GET", f"/api/v1/users/{user_id(c, token)}/usage", token).json())
            and u["items_stored"] == RAISED_LIMIT
            and u
        ),
        what="usage to catch up",
    )
    assert usage["items_delivered"] > usage["items_stored"]  # the bursts outran the budget
    assert usage["items_delivered"] <= x.tweets_streamed  # a tweet for 5 crawlers bills once
    # One connection until the budget ran out and the hub removed every crawler (the stream
    # closed with its last subscriber), one more after the raise; never two at once.
    assert x.connections_accepted == 2 and x.connections_refused == 0
    assert x.max_open_streams == 1
    wait_until(lambda: not x.rules(NODE_TOKEN), what="no rule left once the budget is spent")
    FAULT_TOTALS.update({"X rules left": len(x.rules(NODE_TOKEN))})
    MEASUREMENTS.append(
        f"twitter stream, 3 nodes, 10 crawlers of one user: stream connections "
        f"{x.connections_accepted} (refused {x.connections_refused}, most open at once "
        f"{x.max_open_streams}); crawler limit {CRAWLER_LIMIT} -> stored "
        f"{stored(c, token, ids[:5])}; user limit {USER_LIMIT} -> {sum(spent)}, raised to "
        f"{RAISED_LIMIT} -> {sum(final)}: overshoot {sum(final) - RAISED_LIMIT}; "
        f"delivered {usage['items_delivered']}, stored {usage['items_stored']}"
    )


def test_the_stream_reconnects_after_a_drop_and_backs_off_from_429s(cluster, x, paid):
    c = start(cluster, x, paid, nodes=2)
    token = c.user()
    crawler = c.create(token, "twitter", {"terms": ["alpha"]})["id"]
    wait_states(c, token, [crawler], "running", "the crawler running")
    wait_until(lambda: x.rules(NODE_TOKEN) and x.open_streams() == 1, what="rule and stream")
    rules_before = x.rules(NODE_TOKEN)

    x.fail_next_connects(3, 429)
    x.drop_streams()
    wait_until(
        lambda: (c.get(token, crawler)["last_error"] or "").startswith(
            "rate limited by X (HTTP 429)"
        ),
        what="the rate limit on the crawler's status",
    )
    wait_until(lambda: x.open_streams() == 1, what="connected again")
    wait_until(lambda: c.get(token, crawler)["last_error"] is None, what="the error cleared")
    tweet = x.publish("alpha after the storm")
    wait_until(lambda: tweet in {i["id"] for i in c.items(token, crawler)}, what="delivered")

    attempts = x.connect_times[1:]  # after the first connection
    assert [status for _at, status in attempts][-4:] == [429, 429, 429, 200]
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(attempts)]
    waits = [RATE_LIMIT_WAIT, 2 * RATE_LIMIT_WAIT, 4 * RATE_LIMIT_WAIT]
    assert all(gap >= wait for gap, wait in zip(gaps[-3:], waits, strict=True))
    assert x.rules(NODE_TOKEN) == rules_before  # a reconnect does not touch the rules
    MEASUREMENTS.append(
        "twitter stream dropped, then 3 x 429: waits "
        + ", ".join(f"{gap:.2f}s" for gap in gaps[-3:])
        + f" (rate-limit wait {RATE_LIMIT_WAIT}s, doubling)"
    )


def test_when_the_streams_node_dies_its_rules_are_reconciled_not_duplicated(cluster, x, paid):
    c = start(cluster, x, paid)
    token = c.user()
    ids = [c.create(token, "twitter", {"terms": t})["id"] for t in (["a1"], ["b2"], ["c3"])]
    wait_states(c, token, ids, "running", "three crawlers running")
    wait_until(
        lambda: len(x.rules(NODE_TOKEN)) == 3 and x.open_streams() == 1, what="rules and stream"
    )
    rules = x.rules(NODE_TOKEN)
    adds_before = sum(1 for _method, body in x.rule_requests if "add" in (body or {}))
    victim = c.get(token, ids[0])["node_id"]
    c.node_by_id(victim).kill()

    wait_until(
        lambda: (
            {c.get(token, i)["node_id"] for i in ids} - {None, victim}
            and set(states(c, token, ids)) == {"running"}
        ),
        timeout=60,
        what="the crawlers running on another node",
    )
    wait_until(lambda: x.connections_accepted == 2 and x.open_streams() == 1, what="reconnected")
    tweet = x.publish("b2 moved")
    wait_until(lambda: tweet in {i["id"] for i in c.items(token, ids[1])}, what="delivered")
    assert x.rules(NODE_TOKEN) == rules  # the same rules, same ids: kept, not added again
    assert sum(1 for _method, body in x.rule_requests if "add" in (body or {})) == adds_before
    assert x.max_open_streams == 1


def test_searches_with_equal_terms_share_one_poll_and_fetch_nothing_twice(cluster, x, paid):
    c = start(cluster, x, paid, nodes=2)
    token = c.user()
    first = x.publish("searching for zeta")
    ids = [
        c.create(token, "twitter", {"terms": terms, "mode": "search"})["id"]
        for terms in (["zeta"], ["  ZETA "])
    ]
    uuids = {c.get(token, i)["uuid"] for i in ids}
    assert len(uuids) == 1
    wait_until(lambda: all(n == 1 for n in stored(c, token, ids)), what="the first tweet")
    second = x.publish("zeta again")
    wait_until(lambda: all(n == 2 for n in stored(c, token, ids)), what="the second tweet")
    for crawler_id in ids:
        assert {i["id"] for i in c.items(token, crawler_id)} == {first, second}
    wait_until(
        lambda: second in [search.since_id for search in x.searches], what="a poll after both"
    )
    since_ids = [search.since_id for search in x.searches]
    assert since_ids[0] is None and since_ids.index(first) < since_ids.index(second)
    node = c.node_by_id(c.get(token, ids[0])["node_id"])
    sources = c.node_health(node)["data_sources"]
    assert [s["subscribers"] for s in sources if s["key"] in uuids] == [2]


def test_a_users_own_credential_is_used_and_never_shown(cluster, x, paid):
    c = start(cluster, x, paid, nodes=2)
    token = c.user()
    owner = c.create(token, "twitter", {"terms": ["placeholder"], "mode": "search"})["user_id"]
    stored_credential = c.call(
        "PUT",
        f"/api/v1/users/{owner}/credentials/twitter/mine",
        token,
        json={"bearer_token": USER_TOKEN, "api_base": x.url},
    )
    assert stored_credential.status_code in (200, 201), stored_credential.text
    crawler = c.create(token, "twitter", {"terms": ["omega"], "credential": "mine"})
    wait_states(c, token, [crawler["id"]], "running", "the crawler running")
    wait_until(
        lambda: x.open_streams(USER_TOKEN) == 1 and x.rules(USER_TOKEN),
        what="a stream and a rule on the user's own app",
    )
    assert not x.rules(NODE_TOKEN)
    tweet = x.publish("omega point")
    wait_until(lambda: tweet in {i["id"] for i in c.items(token, crawler["id"])}, what="stored")
    for path in (
        f"/api/v1/crawlers/{crawler['id']}",
        f"/api/v1/users/{owner}/credentials",
        f"/api/v1/users/{owner}/usage",
    ):
        assert USER_TOKEN not in c.call("GET", path, token).text
    for log in c.workdir.glob("*.log"):
        text = log.read_text(errors="replace")
        assert USER_TOKEN not in text and NODE_TOKEN not in text


# -- the paid stream -------------------------------------------------------------------------------

QUERY_A = 'interaction.content contains "cats"'
QUERY_B = 'interaction.content contains "dogs"'


def test_paid_streams_hold_one_connection_per_query_and_limits_are_exact(cluster, x, paid):
    c = start(cluster, x, paid)
    token = c.user(item_limit=150)
    limits = [30, 50, None]
    cats = [c.create(token, "datasift", {"query": QUERY_A}, item_limit=n)["id"] for n in limits]
    dogs = c.create(token, "datasift", {"query": QUERY_B})["id"]
    wait_states(c, token, [*cats, dogs], "running", "four crawlers running")
    assert len({c.get(token, i)["node_id"] for i in cats}) == 1
    wait_until(lambda: paid.open_streams(QUERY_A) == 1 and paid.open_streams(QUERY_B) == 1)

    paid.publish_many(QUERY_A, [f"cat {n}" for n in range(1000)])
    wait_states(c, token, [*cats, dogs], "limit_reached", "the user's budget spent on cats")
    counts = stored(c, token, cats)
    assert sum(counts) == 150 and stored(c, token, [dogs]) == [0]
    assert counts[0] <= 30 and counts[1] <= 50
    wait_until(lambda: paid.open_streams() == 0, what="every paid connection closed")
    usage = wait_until(
        lambda: (
            (u := c.call("GET", f"/api/v1/users/{user_id(c, token)}/usage", token).json())
            and u["items_stored"] == 150
            and u
        ),
        what="usage to catch up",
    )
    billed = usage["by_source"]["datasift"]["items_delivered"]
    assert usage["items_stored"] <= billed <= paid.delivered(QUERY_A)  # once, not once a crawler
    per_crawler = sum(c["items_delivered"] for c in usage["crawlers"])
    assert paid.connections_refused == 0 and paid.max_open_streams == 1
    MEASUREMENTS.append(
        f"paid stream, 3 nodes, 4 crawlers on 2 queries: connections "
        f"{paid.connections_accepted} (refused {paid.connections_refused}); user limit 150 -> "
        f"stored {sum(counts)} {counts}, overshoot {sum(counts) - 150}; provider delivered "
        f"{paid.delivered(QUERY_A)} billable lines, the user's usage {billed} delivered "
        f"(its crawlers {per_crawler} between them)"
    )
