"""The node's HTTP face for billed sources: a credential pushed with the spec or known to the node.

Accepted X specs are searches against an API base where nothing listens (port 9 on loopback),
so the data source only reports errors; every test clears the pool so no thread outlives it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from blackwidow.core.node_protocol import GENERATION_HEADER
from blackwidow.core.store.sqlite import SqliteStore
from sources.credentials import CredentialBook
from sources.fetch.fetcher import GuardedFetcher
from sources.keys import source_key
from sources.registry import opener
from sources.source_type import SourceContext
from sources.twitter.query import TwitterQuery
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.support import FakeClock, wait_until

SECRET = "cluster-secret-for-node-credential-tests"
GENERATION = 3
AUTH = {"Authorization": f"Bearer {SECRET}", GENERATION_HEADER: str(GENERATION)}
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens
NODE_TOKEN = "node-bearer-do-not-show"
PUSHED_TOKEN = "pushed-bearer-do-not-show"
PAID_SECRET = "paid-secret-do-not-show"
NODE_CREDENTIALS = {
    "twitter": {"team": {"bearer_token": NODE_TOKEN, "api_base": NOWHERE, "tier": "pro"}},
    "datasift": {
        "default": {
            "endpoint": f"{NOWHERE}/stream",
            "auth_header": "Authorization",
            "auth_value": PAID_SECRET,
            "query_param": "q",
        }
    },
}


@pytest.fixture
def node(tmp_path) -> Iterator[NodeState]:
    store = SqliteStore(str(tmp_path / "items.db"))
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), deadline=5.0)
    context = SourceContext(
        fetcher,
        feed_interval=60.0,
        credentials=CredentialBook(NODE_CREDENTIALS),
        search_interval=60.0,
        rate_limit_wait=60.0,
    )
    pool = DataSourcePool(opener(context), store)
    node = NodeState(pool, FakeClock(1000.0))
    node.mark_registered(7, GENERATION)
    yield node
    pool.clear()
    store.close()


@pytest.fixture
def client(node: NodeState) -> FlaskClient:
    return create_node_app(node, SECRET, CredentialBook(NODE_CREDENTIALS)).test_client()


def twitter_body(crawler_id: int = 1, pushed: Any = None, **query: Any) -> dict[str, Any]:
    """A search spec; `pushed` is the secret the hub sends, `query` may name a credential."""
    body: dict[str, Any] = {
        "crawler_id": crawler_id,
        "user_id": 5,
        "source": "twitter",
        "query": {"terms": ["python"], "mode": "search", **query},
        "item_limit": None,
        "lease": None,
    }
    if pushed is not None:
        body["credential"] = pushed
    return body


def put(client: FlaskClient, body: dict[str, Any]) -> Any:
    return client.put(f"/subscribers/{body['crawler_id']}", json=body, headers=AUTH)


def assert_refused(response: Any, field: str) -> None:
    assert response.status_code == 422, response.json
    assert response.json["error"]["code"] == "invalid"
    assert response.json["error"]["field"] == field


def poll(client: FlaskClient) -> dict[str, Any]:
    response = client.get("/subscribers", headers=AUTH)
    assert response.status_code == 200, response.json
    return response.json


@pytest.mark.parametrize("mode", ["stream", "search"])
def test_a_spec_naming_a_credential_the_node_lacks_is_refused(client, node, mode):
    response = put(client, twitter_body(mode=mode, credential="absent"))

    assert_refused(response, "query.credential")
    assert "'absent'" in response.json["error"]["message"]
    assert node.pool.statuses() == [] and node.pool.data_sources() == []


def test_a_spec_naming_no_credential_needs_a_default_on_the_node(client, node):
    assert_refused(put(client, twitter_body()), "query.credential")
    assert node.pool.statuses() == []


def test_a_spec_naming_the_nodes_own_credential_is_accepted(client, node):
    body = twitter_body(credential="team")

    response = put(client, body)

    assert response.status_code == 200, response.json
    assert response.json["crawler_id"] == 1
    query = TwitterQuery().load(body["query"])
    assert [d["key"] for d in poll(client)["data_sources"]] == [source_key("twitter", query)]


def test_a_pushed_credential_is_accepted_for_a_name_the_node_lacks(client, node):
    body = twitter_body(
        pushed={"bearer_token": PUSHED_TOKEN, "api_base": NOWHERE + "/"}, credential="mine"
    )

    response = put(client, body)

    assert response.status_code == 200, response.json
    query = TwitterQuery().load(body["query"])
    # a user's stored credential is that user's account: the owner is part of the key
    assert [d["key"] for d in poll(client)["data_sources"]] == [
        source_key("twitter", query, credential_owner=5)
    ]


def test_a_pushed_credential_never_shows_in_the_nodes_answers(client, node):
    body = twitter_body(pushed={"bearer_token": PUSHED_TOKEN, "api_base": NOWHERE})

    answers = [put(client, body).get_data(as_text=True)]
    wait_until(
        lambda: poll(client)["subscribers"][0]["last_error"],
        what="the search to report that nothing answers",
    )
    answers += [
        json.dumps(poll(client)),
        client.get("/healthz").get_data(as_text=True),
    ]

    assert not any(PUSHED_TOKEN in answer for answer in answers)


@pytest.mark.parametrize(
    ("credential", "field"),
    [
        pytest.param({"api_base": NOWHERE}, "credential.bearer_token", id="no-token"),
        pytest.param({"bearer_token": ""}, "credential.bearer_token", id="empty-token"),
        pytest.param(
            {"bearer_token": PUSHED_TOKEN, "api_base": f"http://u:{PUSHED_TOKEN}@127.0.0.1:9"},
            "credential.api_base",
            id="secret-in-api-base",
        ),
        pytest.param({"bearer_token": PUSHED_TOKEN, "tier": "gold"}, "credential.tier", id="tier"),
        pytest.param(
            {"bearer_token": PUSHED_TOKEN, "surprise": 1}, "credential.surprise", id="unknown"
        ),
    ],
)
def test_a_pushed_credential_is_validated_by_its_source(client, node, credential, field):
    response = put(client, twitter_body(pushed=credential))

    assert_refused(response, field)
    assert PUSHED_TOKEN not in response.get_data(as_text=True)
    assert node.pool.statuses() == []


def test_a_pushed_credential_that_is_not_an_object_is_refused(client, node):
    body = twitter_body(pushed=PUSHED_TOKEN)

    response = put(client, body)

    assert_refused(response, "credential")
    assert PUSHED_TOKEN not in response.get_data(as_text=True)
    assert node.pool.statuses() == []


def test_an_rss_spec_carrying_a_credential_is_refused(client, node):
    body = {
        "crawler_id": 1,
        "user_id": 5,
        "source": "rss",
        "query": {"feeds": [f"{NOWHERE}/feed.xml"]},
        "credential": {"bearer_token": PUSHED_TOKEN},
    }

    response = put(client, body)

    assert_refused(response, "credential")
    assert node.pool.statuses() == []


def test_healthz_lists_credential_names_never_values(client):
    response = client.get("/healthz")  # no Authorization: anyone may ask

    assert response.status_code == 200
    assert response.json["credentials"] == {"datasift": ["default"], "twitter": ["team"]}
    text = response.get_data(as_text=True)
    assert not any(secret in text for secret in (NODE_TOKEN, PAID_SECRET, NOWHERE))


def test_a_node_without_credentials_lists_none(node):
    client = create_node_app(node, SECRET).test_client()

    assert client.get("/healthz").json["credentials"] == {}
    assert_refused(put(client, twitter_body(credential="team")), "query.credential")
