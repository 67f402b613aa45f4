"""The node's protocol as its OpenAPI description shows it, and its errors in the one shape."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from flask import Flask
from flask.testing import FlaskClient

from blackwidow.core.node_protocol import (
    ASSIGNED_HEADER,
    EPOCH_HEADER,
    GENERATION_HEADER,
    RENEWAL_HEADER,
    SHARD_HEADER,
    SINCE_HEADER,
)
from blackwidow.core.store.sqlite import SqliteStore
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.support import FakeClock

SECRET = "cluster-secret-for-node-api-tests"
GENERATION = 2
AUTH = {"Authorization": f"Bearer {SECRET}", GENERATION_HEADER: str(GENERATION)}
UNDOCUMENTED = {"static", "api-docs.openapi_json"}  # Flask's own, and the description itself


@pytest.fixture
def app(tmp_path) -> Iterator[Flask]:
    store = SqliteStore(str(tmp_path / "items.db"))
    pool = DataSourcePool(opener(SourceContext(GuardedFetcher(), 60.0)), store)
    node = NodeState(pool, FakeClock(1000.0))
    node.mark_registered(1, GENERATION)
    yield create_node_app(node, SECRET)
    pool.clear()
    store.close()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def openapi_path(rule: str) -> str:
    return re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule)


def test_the_node_describes_every_route_it_serves_in_a_valid_openapi_document(
    app: Flask, client: FlaskClient
) -> None:
    response = client.get("/openapi.json")  # no secret: the protocol is public

    assert response.status_code == 200
    spec = response.json
    schemathesis.openapi.from_dict(spec).validate()
    served = {
        (openapi_path(rule.rule), method.lower())
        for rule in app.url_map.iter_rules()
        if rule.endpoint not in UNDOCUMENTED
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    described = {(path, method) for path, ops in spec["paths"].items() for method in ops}
    assert served <= described
    assert ("/subscribers", "get") in served and ("/metrics", "get") in served


def test_the_protocol_headers_are_described_on_the_calls_that_read_them(
    client: FlaskClient,
) -> None:
    spec = client.get("/openapi.json").json

    def headers(path: str, method: str) -> set[str]:
        operation = spec["paths"][path][method]
        return {p["name"] for p in operation["parameters"] if p["in"] == "header"}

    every_call = {GENERATION_HEADER, SHARD_HEADER, EPOCH_HEADER}
    poll = every_call | {SINCE_HEADER, ASSIGNED_HEADER, RENEWAL_HEADER}
    assert headers("/subscribers", "get") == poll
    assert headers("/subscribers", "put") == every_call
    assert headers("/subscribers/{crawler_id}", "delete") == every_call
    assert "requestBody" in spec["paths"]["/subscribers/{crawler_id}"]["put"]


RSS = {"crawler_id": 1, "user_id": 1, "source": "rss", "query": {"feeds": ["http://a.test/"]}}


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "status", "field"),
    [
        ("GET", "/subscribers", {GENERATION_HEADER: "two"}, None, 400, GENERATION_HEADER),
        ("GET", "/subscribers", {SHARD_HEADER: "1/1"}, None, 400, SHARD_HEADER),
        ("GET", "/subscribers", {EPOCH_HEADER: "x"}, None, 400, EPOCH_HEADER),
        ("GET", "/subscribers", {SINCE_HEADER: "a:b"}, None, 400, SINCE_HEADER),
        # a digit to str.isdigit, not to int(): these were 500s
        ("GET", "/subscribers", {EPOCH_HEADER: "\xb2"}, None, 400, EPOCH_HEADER),
        ("GET", "/subscribers", {SINCE_HEADER: "a:\xb2"}, None, 400, SINCE_HEADER),
        ("GET", "/subscribers", {ASSIGNED_HEADER: "1,x"}, None, 400, ASSIGNED_HEADER),
        ("GET", "/subscribers", {RENEWAL_HEADER: "0 token"}, None, 400, RENEWAL_HEADER),
        ("PUT", "/subscribers/1", {}, {**RSS, "lease": -1}, 422, "lease"),
        ("PUT", "/subscribers/1", {}, {**RSS, "query": {"feeds": []}}, 422, "query.feeds"),
        ("PUT", "/subscribers/1", {}, {**RSS, "colour": "red"}, 422, "colour"),
        ("PUT", "/subscribers", {}, {"subscribers": [RSS] * 1001}, 422, "subscribers"),
        ("DELETE", "/subscribers", {}, {"crawler_ids": [True]}, 422, "crawler_ids"),
    ],
)
def test_a_bad_header_or_body_is_a_4xx_in_the_one_error_shape_naming_the_field(
    client: FlaskClient,
    method: str,
    path: str,
    headers: dict[str, str],
    body: Any,
    status: int,
    field: str,
) -> None:
    response = client.open(path, method=method, headers={**AUTH, **headers}, json=body)

    assert response.status_code == status
    error = response.json["error"]
    assert set(error) == {"code", "message", "field"}
    assert (error["code"], error["field"]) == ("invalid", field)
    assert error["message"].startswith(f"{field}: ")


def test_a_removal_answers_an_empty_204(client: FlaskClient) -> None:
    response = client.delete("/subscribers/1", headers=AUTH)

    assert (response.status_code, response.data) == (204, b"")
