"""The hub's and the node's OpenAPI documents as a client generator reads them: valid, every
operation named (a unique operationId) and summarised, and the bearer scheme it asks for
named on exactly the operations that answer a caller without it with 401."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from openapi_spec_validator import validate

from blackwidow.core.store.sqlite import SqliteStore
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.component.conftest import ADMIN, bearer
from tests.support import FakeClock

NODE_SECRET = "cluster-secret-for-the-description"
METHODS = ("get", "put", "post", "delete", "patch")
PATH_VALUES = {"source": "rss", "name": "main"}  # any other parameter is an id: 1


@pytest.fixture
def node_app(tmp_path) -> Iterator[Flask]:
    store = SqliteStore(str(tmp_path / "items.db"))
    pool = DataSourcePool(opener(SourceContext(GuardedFetcher(), 60.0)), store)
    node = NodeState(pool, FakeClock(1000.0))
    node.mark_registered(1, 1)
    yield create_node_app(node, NODE_SECRET)
    pool.clear()
    store.close()


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def called(path: str) -> str:
    """The path with a value for each parameter."""
    return re.sub(r"{(\w+)}", lambda match: PATH_VALUES.get(match[1], "1"), path)


def check_description(app: Flask, spec_path: str, strong_token: str | None) -> None:
    """Every operation of `app`'s document is named, summarised and secured as it behaves:
    one that answers 401 without a token names a bearer scheme, the one it needs: with
    `strong_token` (the hub's admin token) still a 401, the cluster secret."""
    client = app.test_client()
    spec = client.get(spec_path).json
    validate(spec)
    schemes = spec["components"]["securitySchemes"]
    assert all(s == {"type": "http", "scheme": "bearer", **s} for s in schemes.values())
    ids = [op.get("operationId") for _, _, op in operations(spec)]
    assert all(ids) and len(set(ids)) == len(ids), ids
    for path, method, op in operations(spec):
        where = f"{method.upper()} {path} ({op.get('operationId')})"
        assert op.get("summary", "").strip(), f"{where}: no summary (a docstring on its view)"
        answer = client.open(called(path), method=method.upper())
        if answer.status_code != 401:
            assert "security" not in op, f"{where}: open, but described as secured"
            continue
        assert "security" in op, f"{where}: answers 401, but names no security scheme"
        [named] = [name for requirement in op["security"] for name in requirement]
        assert named in schemes, where
        if strong_token is not None:
            again = client.open(called(path), method=method.upper(), headers=bearer(strong_token))
            assert (named == "cluster") == (again.status_code == 401), where


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_hubs_description_names_summarises_and_secures_every_operation(hub_app: Flask):
    check_description(hub_app, "/api/v1/openapi.json", ADMIN)


def test_the_nodes_description_names_summarises_and_secures_every_operation(node_app: Flask):
    check_description(node_app, "/openapi.json", None)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_operation_ids_follow_the_endpoints_so_they_stay_put(hub_app: Flask):
    spec = hub_app.test_client().get("/api/v1/openapi.json").json
    named = {(path, method): op["operationId"] for path, method, op in operations(spec)}
    assert named[("/api/v1/crawlers/{crawler_id}", "get")] == "crawlers_crawler_by_id_get"
    assert named[("/healthz", "get")] == "health_healthz_get"
