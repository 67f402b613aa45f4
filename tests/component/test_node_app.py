"""The node's HTTP face on a real pool, store and RSS sources; the watchdog on a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from blackwidow.core.node_protocol import (
    ASSIGNED_HEADER,
    EPOCH_HEADER,
    GENERATION_HEADER,
    RENEWAL_HEADER,
    SHARD_HEADER,
    SINCE_HEADER,
    Shard,
)
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.demo.feed_server import FeedServer
from sources.fetch.fetcher import GuardedFetcher
from sources.keys import source_key
from sources.model import SubscriberSpec
from sources.registry import opener
from sources.source_type import SourceContext
from spawn import watchdog
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.renewals import Renewals
from spawn.pool.source_pool import DataSourcePool
from tests.support import FakeClock, wait_until

SECRET = "cluster-secret-for-node-tests"
GENERATION = 3
AUTH = {"Authorization": f"Bearer {SECRET}", GENERATION_HEADER: str(GENERATION)}
FEED_INTERVAL = 0.1
ORPHAN_AFTER = 10.0
DETACH_AFTER = 30.0
LOOPBACK = frozenset({"127.0.0.1"})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def node(tmp_path, clock: FakeClock) -> Iterator[NodeState]:
    store = SqliteStore(str(tmp_path / "items.db"))
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0)
    pool = DataSourcePool(opener(SourceContext(fetcher, FEED_INTERVAL)), store)
    node = NodeState(pool, clock)
    node.mark_registered(7, GENERATION)
    yield node
    pool.clear()
    store.close()


@pytest.fixture
def client(node: NodeState) -> FlaskClient:
    return create_node_app(node, SECRET).test_client()


def feed(server: FeedServer, name: str) -> str:
    return f"{server.url}/feeds/{name}.xml?items=5"


def spec_body(crawler_id: int, feeds: list[str], **changes: Any) -> dict[str, Any]:
    body = {
        "crawler_id": crawler_id,
        "user_id": 1,
        "source": "rss",
        "query": {"feeds": feeds, "keywords": []},
        "item_limit": None,
        "lease": None,
    }
    return {**body, **changes}


def put(client: FlaskClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.put(f"/subscribers/{body['crawler_id']}", json=body, headers=AUTH)
    assert response.status_code == 200, response.json
    return response.json


def poll(client: FlaskClient, assigned: str | None = None) -> dict[str, Any]:
    headers = {**AUTH, ASSIGNED_HEADER: assigned} if assigned is not None else AUTH
    response = client.get("/subscribers", headers=headers)
    assert response.status_code == 200, response.json
    return response.json


def crawler_ids(node: NodeState) -> set[int]:
    return {s["crawler_id"] for s in node.pool.statuses()}


@pytest.mark.parametrize(
    ("method", "path"),
    [("put", "/subscribers/1"), ("delete", "/subscribers/1"), ("get", "/subscribers")],
)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": SECRET}, {"Authorization": "Bearer"}],
    ids=["none", "wrong-secret", "no-scheme", "empty-bearer"],
)
def test_every_call_but_healthz_needs_the_cluster_secret(
    client: FlaskClient, node: NodeState, feeds: FeedServer, method: str, path: str, headers: dict
) -> None:
    response = client.open(
        path, method=method.upper(), json=spec_body(1, [feed(feeds, "news")]), headers=headers
    )

    assert response.status_code == 401
    assert response.json["error"]["field"] == "Authorization"
    assert response.json["error"]["code"] == "unauthorized"
    assert node.pool.statuses() == []
    assert client.get("/healthz").status_code == 200


def test_put_list_and_delete_a_subscriber(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    body = spec_body(1, [feed(feeds, "news")], item_limit=50, lease=20)
    expected = SubscriberSpec(**body)

    created = put(client, body)

    assert created["crawler_id"] == 1
    assert created["digest"] == expected.digest()
    assert created["lease"] == 20
    listed = poll(client)
    assert [(s["crawler_id"], s["digest"]) for s in listed["subscribers"]] == [
        (1, expected.digest())
    ]
    assert [(d["key"], d["subscribers"]) for d in listed["data_sources"]] == [
        (source_key("rss", body["query"]), 1)
    ]

    assert put(client, body)["digest"] == expected.digest()  # the same push again is fine
    assert len(node.pool.statuses()) == 1

    assert client.delete("/subscribers/1", headers=AUTH).status_code == 204
    assert client.delete("/subscribers/1", headers=AUTH).status_code == 204
    emptied = poll(client)
    assert (emptied["subscribers"], emptied["data_sources"], emptied["full"]) == ([], [], True)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"crawler_id": 2}, "crawler_id", id="crawler-id-differs-from-url"),
        pytest.param(
            {"source": "gopher"},
            "source",
            id="unknown-source",
        ),
        pytest.param(
            {"query": {"feeds": ["ftp://127.0.0.1/feed.xml"]}}, "query.feeds.0", id="non-http-feed"
        ),
        pytest.param({"query": {"feeds": []}}, "query.feeds", id="no-feeds"),
        pytest.param({"query": {}}, "query.feeds", id="feeds-missing"),
        pytest.param(
            {"item_limit": -1},
            "item_limit",
            id="negative-item-limit",
        ),
        pytest.param(
            {"lease": -1},
            "lease",
            id="negative-lease",
        ),
        pytest.param(
            {"user_id": None},
            "user_id",
            id="missing-user-id",
        ),
        pytest.param({"recollect_after": 60}, "recollect_after", id="short-segments"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_field(
    client: FlaskClient, node: NodeState, feeds: FeedServer, changes: dict[str, Any], field: str
) -> None:
    body = {**spec_body(1, [feed(feeds, "news")]), **changes}
    body = {k: v for k, v in body.items() if not (k == "user_id" and v is None)}

    response = client.put("/subscribers/1", json=body, headers=AUTH)

    assert response.status_code == 422
    assert response.json["error"]["code"] == "invalid"
    assert response.json["error"]["field"] == field
    assert node.pool.statuses() == []


@pytest.mark.parametrize(
    "data", [b"not json", b"[1, 2]", b'"source"'], ids=["not-json", "array", "string"]
)
def test_a_body_that_is_not_a_json_object_is_refused(
    client: FlaskClient, node: NodeState, data: bytes
) -> None:
    response = client.put(
        "/subscribers/1", data=data, headers={**AUTH, "Content-Type": "application/json"}
    )

    assert response.status_code == 422
    assert response.json["error"]["code"] == "invalid"
    assert response.json["error"]["field"]
    assert node.pool.statuses() == []


def test_a_poll_confirms_the_assigned_subscribers_and_the_watchdog_drops_the_rest(
    client: FlaskClient, node: NodeState, clock: FakeClock, feeds: FeedServer
) -> None:
    url = feed(feeds, "news")
    for crawler_id in (1, 2, 3):
        put(client, spec_body(crawler_id, [url]))

    clock.now += 5
    poll(client, assigned="1, 2")
    clock.now += ORPHAN_AFTER - 3  # 3 has not been confirmed for longer than orphan_after
    watchdog.check(node, ORPHAN_AFTER, DETACH_AFTER)

    assert crawler_ids(node) == {1, 2}
    assert node.registered.is_set()
    assert [d["subscribers"] for d in node.pool.data_sources()] == [2]


@pytest.mark.parametrize("header", ["1,two", "1;2", "0x1"])
def test_a_malformed_assigned_header_is_refused(
    client: FlaskClient, node: NodeState, clock: FakeClock, feeds: FeedServer, header: str
) -> None:
    put(client, spec_body(1, [feed(feeds, "news")]))
    clock.now += 5

    response = client.get("/subscribers", headers={**AUTH, ASSIGNED_HEADER: header})

    assert response.status_code == 400
    assert response.json["error"]["field"] == ASSIGNED_HEADER


def test_a_node_the_hub_stops_polling_detaches(
    client: FlaskClient, node: NodeState, clock: FakeClock, feeds: FeedServer
) -> None:
    put(client, spec_body(1, [feed(feeds, "news")]))

    clock.now += DETACH_AFTER - 5
    poll(client, assigned="1")  # a poll restarts the silence
    clock.now += DETACH_AFTER - 5
    watchdog.check(node, ORPHAN_AFTER * 10, DETACH_AFTER)
    assert crawler_ids(node) == {1}
    assert node.registered.is_set()

    clock.now += 6
    watchdog.check(node, ORPHAN_AFTER * 10, DETACH_AFTER)

    assert node.pool.statuses() == []
    assert node.pool.data_sources() == []
    assert not node.registered.is_set()
    health = client.get("/healthz").json
    assert health["registered"] is False
    assert health["data_sources"] == []
    assert health["subscribers"] == 0


def test_healthz_lists_data_sources_with_their_subscriber_counts(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    shared, alone = [feed(feeds, "news"), feed(feeds, "tech")], [feed(feeds, "sports")]
    put(client, spec_body(1, shared))
    put(client, spec_body(2, list(reversed(shared))))
    put(client, spec_body(3, alone))

    response = client.get("/healthz")  # no Authorization: load balancers ask too

    assert response.status_code == 200
    health = response.json
    assert health["role"] == "node"
    assert health["registered"] is True
    assert health["generation"] == GENERATION
    assert health["subscribers_started"] == 3
    assert health["crawlers"] == [1, 2, 3]
    assert health["subscribers"] == 3
    assert {d["key"]: d["subscribers"] for d in health["data_sources"]} == {
        source_key("rss", {"feeds": shared}): 2,
        source_key("rss", {"feeds": alone}): 1,
    }


@pytest.mark.parametrize("header", [None, "", "three", "3.0"])
def test_a_call_without_a_generation_number_is_refused(
    client: FlaskClient, node: NodeState, feeds: FeedServer, header: str | None
) -> None:
    headers = {"Authorization": AUTH["Authorization"]}
    if header is not None:
        headers[GENERATION_HEADER] = header

    response = client.put(
        "/subscribers/1", json=spec_body(1, [feed(feeds, "news")]), headers=headers
    )

    assert response.status_code == 400
    assert response.json["error"]["field"] == GENERATION_HEADER
    assert node.pool.statuses() == []


def test_a_call_from_an_older_generation_is_refused_and_ignored(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    put(client, spec_body(1, [feed(feeds, "news")]))
    older = {**AUTH, GENERATION_HEADER: str(GENERATION - 1)}

    pushed = client.put("/subscribers/2", json=spec_body(2, [feed(feeds, "tech")]), headers=older)
    removed = client.delete("/subscribers/1", headers=older)

    assert (pushed.status_code, removed.status_code) == (409, 409)
    assert pushed.json["error"]["code"] == "stale_generation"
    assert crawler_ids(node) == {1}
    assert node.registered.is_set()


def test_a_call_from_a_newer_generation_makes_the_node_drop_everything_and_register_again(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    """The hub wrote this node off (declared it dead while it was cut off): it must stop."""
    put(client, spec_body(1, [feed(feeds, "news")]))

    response = client.get("/subscribers", headers={**AUTH, GENERATION_HEADER: str(GENERATION + 1)})

    assert response.status_code == 409
    assert node.pool.statuses() == [] and node.pool.data_sources() == []
    assert not node.registered.is_set() and node.generation is None
    assert client.get("/subscribers", headers=AUTH).status_code == 409  # until it registers


def test_an_unregistered_node_refuses_work(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    node.detach("test")

    response = client.put("/subscribers/1", json=spec_body(1, [feed(feeds, "news")]), headers=AUTH)

    assert response.status_code == 409
    assert node.pool.statuses() == []


def since(client: FlaskClient, cursor: str, **headers: str) -> dict[str, Any]:
    response = client.get("/subscribers", headers={**AUTH, SINCE_HEADER: cursor, **headers})
    assert response.status_code == 200, response.json
    return response.json


def test_a_poll_with_the_last_cursor_answers_only_what_changed(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    put(client, spec_body(1, [feed(feeds, "one")]))
    put(client, spec_body(2, [feed(feeds, "two")]))
    first = wait_until(  # once both feeds are stored, nothing changes until the test does
        lambda: (p := poll(client)) and all(s["items_collected"] for s in p["subscribers"]) and p,
        what="both feeds stored",
    )
    assert first["full"] and {s["crawler_id"] for s in first["subscribers"]} == {1, 2}

    quiet = since(client, first["cursor"])
    assert (quiet["full"], quiet["subscribers"], quiet["removed"]) == (False, [], [])
    assert quiet["totals"] == {"subscribers": 2, "data_sources": 2, "held": 0}

    put(client, spec_body(2, [feed(feeds, "two")], item_limit=9))
    client.delete("/subscribers/1", headers=AUTH)
    changed = since(client, quiet["cursor"])
    assert [s["crawler_id"] for s in changed["subscribers"]] == [2]
    assert (
        changed["subscribers"][0]["digest"]
        == SubscriberSpec(**spec_body(2, [feed(feeds, "two")], item_limit=9)).digest()
    )
    assert changed["removed"] == [1]
    assert len(changed["removed_data_sources"]) == 1

    # the answer was lost: the same cursor again gets the same changes
    assert since(client, quiet["cursor"])["removed"] == [1]
    # a cursor of another stream (a restarted node, say) gets everything
    assert since(client, "0123456789abcdef:1")["full"]


def test_every_poll_confirms_its_shards_subscribers_and_an_unpolled_shard_leaves_orphans(
    client: FlaskClient, node: NodeState, clock: FakeClock, feeds: FeedServer
) -> None:
    crawler_ids_by_shard: dict[int, set[int]] = {0: set(), 1: set()}
    for crawler_id in range(1, 7):
        body = spec_body(crawler_id, [feed(feeds, f"o{crawler_id}")])
        put(client, body)
        shard = 0 if Shard(0, 2).owns(source_key("rss", body["query"])) else 1
        crawler_ids_by_shard[shard].add(crawler_id)
    for _ in range(3):  # only shard 0's leader polls, for longer than orphan_after
        clock.now += ORPHAN_AFTER - 1
        since(client, "", **{SHARD_HEADER: "0/2"})

    watchdog.check(node, ORPHAN_AFTER, DETACH_AFTER)

    assert crawler_ids(node) == crawler_ids_by_shard[0]


def test_each_shard_polls_its_own_subscribers(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    for crawler_id in range(1, 9):
        put(client, spec_body(crawler_id, [feed(feeds, f"f{crawler_id}")]))
    seen = []
    for index in range(2):
        answer = since(client, "", **{SHARD_HEADER: f"{index}/2"})
        seen.append({s["crawler_id"] for s in answer["subscribers"]})
        for status in answer["subscribers"]:
            key = source_key(
                "rss", spec_body(1, [feed(feeds, f"f{status['crawler_id']}")])["query"]
            )
            assert Shard(index, 2).owns(key)
    assert seen[0] | seen[1] == set(range(1, 9)) and not seen[0] & seen[1]


def test_a_batch_put_answers_per_crawler_and_a_batch_delete_names_what_it_removed(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    good = spec_body(1, [feed(feeds, "one")])
    bad = spec_body(2, [feed(feeds, "two")], item_limit=-1)
    response = client.put("/subscribers", json={"subscribers": [good, bad]}, headers=AUTH)

    assert response.status_code == 200
    results = response.json["results"]
    assert results["1"]["status"]["digest"] == SubscriberSpec(**good).digest()
    assert results["2"]["error"]["field"] == "item_limit"
    assert crawler_ids(node) == {1}

    removed = client.delete("/subscribers", json={"crawler_ids": [1, 5]}, headers=AUTH)
    assert removed.json == {"removed": [1], "counts": {"1": 0}}  # its count, the store's
    assert crawler_ids(node) == set()


@pytest.mark.parametrize(
    ("path", "method", "body", "field"),
    [
        ("/subscribers", "put", {"subscribers": "x"}, "subscribers"),
        ("/subscribers", "put", {"subscribers": [{"crawler_id": "1"}]}, "crawler_id"),
        ("/subscribers", "delete", {"crawler_ids": ["a"]}, "crawler_ids"),
        ("/subscribers", "delete", {"crawler_ids": list(range(1001))}, "crawler_ids"),
    ],
)
def test_a_malformed_batch_is_refused_naming_the_field(
    client: FlaskClient, node: NodeState, path: str, method: str, body: Any, field: str
) -> None:
    response = client.open(path, method=method.upper(), json=body, headers=AUTH)
    assert response.status_code == 422
    assert response.json["error"]["field"] == field


def test_a_leader_with_an_older_epoch_is_refused(
    client: FlaskClient, node: NodeState, feeds: FeedServer
) -> None:
    body = spec_body(1, [feed(feeds, "one")])
    newer = {**AUTH, EPOCH_HEADER: "5"}
    older = {**AUTH, EPOCH_HEADER: "4"}
    assert client.put("/subscribers/1", json=body, headers=newer).status_code == 200

    refused = client.delete("/subscribers/1", headers=older)

    assert refused.status_code == 409
    assert refused.json["error"]["field"] == EPOCH_HEADER
    assert crawler_ids(node) == {1}
    other_shard = {**older, SHARD_HEADER: "1/2"}  # epochs are per shard
    assert client.get("/subscribers", headers=other_shard).status_code == 200


@pytest.mark.parametrize(
    ("header", "value"),
    [(SINCE_HEADER, "nocolon"), (SHARD_HEADER, "2/2"), (SHARD_HEADER, "a/b"), (EPOCH_HEADER, "-1")],
)
def test_malformed_protocol_headers_are_refused_naming_them(
    client: FlaskClient, header: str, value: str
) -> None:
    response = client.get("/subscribers", headers={**AUTH, header: value})
    assert response.status_code == 400
    assert response.json["error"]["field"] == header


def test_one_subscriber_is_shown_with_its_feeds_health(
    client: FlaskClient, feeds: FeedServer
) -> None:
    url = feed(feeds, "news")
    put(client, spec_body(1, [url]))

    def fetched() -> dict[str, Any] | None:
        shown = client.get("/subscribers/1", headers=AUTH).json
        return shown if shown["feeds"][0]["entries"] is not None else None  # parsed once

    shown = wait_until(fetched, timeout=10, what="the feed's first fetch")
    assert shown["crawler_id"] == 1 and shown["failing"] is False
    assert [(f["url"], f["error_streak"], f["entries"]) for f in shown["feeds"]] == [(url, 0, 5)]
    missing = client.get("/subscribers/2", headers=AUTH)
    assert missing.status_code == 404 and missing.json["error"]["field"] == "crawler_id"
    assert client.get("/subscribers/1").status_code == 401


def test_a_poll_renews_leases_from_the_answer_it_echoes(tmp_path, clock: FakeClock) -> None:
    """Leases count from the node's answer the hub echoes, on the node's clock: a token of
    another process, or a malformed header, renews nothing."""
    store = SqliteStore(str(tmp_path / "renewals.db"))
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0)
    renewals = Renewals(clock)
    pool = DataSourcePool(opener(SourceContext(fetcher, FEED_INTERVAL)), store, renewals=renewals)
    node = NodeState(pool, clock)
    node.mark_registered(7, GENERATION)
    client = create_node_app(node, SECRET).test_client()
    try:
        first = poll(client)["renewal"]
        assert not renewals.in_force("any key")
        clock.now += 1.0
        foreign = Renewals(clock).token()
        refused = client.get("/subscribers", headers={**AUTH, RENEWAL_HEADER: "soon " + first})
        assert refused.status_code == 400
        assert refused.json["error"]["field"] == RENEWAL_HEADER
        client.get("/subscribers", headers={**AUTH, RENEWAL_HEADER: f"5.0 {foreign}"})
        assert not renewals.in_force("any key")
        client.get("/subscribers", headers={**AUTH, RENEWAL_HEADER: f"5.0 {first}"})
        clock.now = 1004.5  # the echoed answer was given at 1000
        assert renewals.in_force("any key")
        clock.now = 1005.0
        assert not renewals.in_force("any key")
    finally:
        pool.clear()
        store.close()
