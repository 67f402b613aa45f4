"""A misconfigured node is told why, on the real hub app and real node apps on loopback: the
hub calls a registering node back and refuses a URL it cannot reach (422, `url`), a wrong
cluster secret is named as such, and a node's /readyz answers 503 with the reason until it
has registered, its log saying each reason once however often it retries."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.node_client import unreachable_because
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn import registration
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.component.conftest import ADMIN, SECRET, ServedNodes, bearer
from tests.servers.hostile_http import HostileServer
from tests.support import served, wait_until

SECRET_REFUSED = "registration refused: cluster secret does not match the hub's"


def register(client: FlaskClient, url: str, secret: str = SECRET) -> Any:
    return client.post("/api/v1/nodes", json={"url": url}, headers=bearer(secret))


def stopped_url(serve_node: ServedNodes) -> str:
    """A loopback URL where a node answered and answers no more: connections are refused."""
    url = serve_node()
    serve_node.stop(url)
    return url


def test_the_hub_refuses_a_node_url_it_cannot_reach_saying_why(client, serve_node) -> None:
    url = stopped_url(serve_node)
    refused = register(client, url)
    assert refused.status_code == 422, refused.json
    error = refused.json["error"]
    assert error["field"] == "url"
    assert error["message"].startswith(f"the hub could not reach this node at {url}/healthz (")
    assert "Connection refused" in error["message"]
    assert "--advertise-url" in error["message"]
    assert client.get("/api/v1/nodes", headers=bearer(ADMIN)).json == []  # nothing recorded
    assert register(client, serve_node()).status_code == 201  # a node there: taken


def test_the_call_back_wants_a_node_answering_without_redirects(hub_app: Flask) -> None:
    with HostileServer() as server, served(hub_app, "hub") as hub_url:
        elsewhere = server.url("/redirect?to=" + server.url("/rss"))
        assert unreachable_because(elsewhere) == "GET /healthz answered HTTP 302"
        assert server.requests_to("/rss") == []  # not followed
        assert unreachable_because(server.url("/rss")) == "GET /healthz answered HTTP 404"
        # a node told to advertise the hub's own URL
        assert unreachable_because(hub_url) == "GET /healthz did not answer as a Black Widow node"


def test_a_wrong_cluster_secret_is_named_as_such_never_shown(client, serve_node) -> None:
    wrong = register(client, serve_node(), secret="not-the-secret")
    missing = client.post("/api/v1/nodes", json={"url": serve_node()})
    assert wrong.status_code == missing.status_code == 401
    assert wrong.json["error"]["message"].startswith("the cluster secret does not match the hub's")
    assert missing.json["error"]["message"].startswith("the cluster secret is required")
    assert SECRET not in str(wrong.json) + str(missing.json)


def test_a_node_refuses_a_hub_call_with_another_secret_naming_its_own(node: NodeState) -> None:
    app = create_node_app(node, SECRET).test_client()
    answer = app.get("/subscribers", headers=bearer("not-the-secret"))
    assert answer.status_code == 401
    assert answer.json["error"]["message"].startswith(
        "the cluster secret does not match the node's"
    )


# -- a node's own registration loop against the real hub ------------------------------------


@pytest.fixture
def hub_url(hub_app: Flask) -> Iterator[str]:
    """The hub served on loopback, counting the registrations it answers."""
    calls = {"registrations": 0}
    wsgi = hub_app.wsgi_app

    def counting(environ: dict[str, Any], start: Callable[..., Any]) -> Any:
        if environ["PATH_INFO"] == "/api/v1/nodes" and environ["REQUEST_METHOD"] == "POST":
            calls["registrations"] += 1
        return wsgi(environ, start)

    hub_app.extensions["registrations"] = calls
    hub_app.wsgi_app = counting  # type: ignore[method-assign]
    with served(hub_app, "hub") as url:
        yield url
    hub_app.wsgi_app = wsgi  # type: ignore[method-assign]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeState]:
    store = SqliteStore(str(tmp_path / "node-items.db"))
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), deadline=5.0)
    yield NodeState(DataSourcePool(opener(SourceContext(fetcher, 60.0)), store), time.monotonic)
    store.close()


@contextmanager
def registering(node: NodeState, hub: str, url: str, secret: str = SECRET) -> Iterator[None]:
    """The node's registration thread, as spawn.runtime starts it, until the block ends."""
    stop = threading.Event()
    thread = threading.Thread(
        target=registration.keep_registering,
        args=(node, hub, url, 10, secret, stop),
        name="registration",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "spawn.registration"]


def test_a_node_is_ready_once_registered(hub_app: Flask, hub_url: str, node: NodeState) -> None:
    with served(create_node_app(node, SECRET), "node") as url:
        readiness = create_node_app(node, SECRET).test_client()
        before = readiness.get("/readyz")
        assert (before.status_code, before.json["status"]) == (503, "not_ready")
        assert before.json["reasons"] == ["not registered with the hub: no answer from the hub yet"]
        alive = readiness.get("/healthz")
        assert (alive.status_code, alive.json["registered"]) == (200, False)  # alive all along
        with registering(node, hub_url, url):
            wait_until(node.registered.is_set, timeout=10, what="registration")
            after = readiness.get("/readyz")
            assert (after.status_code, after.json) == (
                200,
                {"status": "ready", "role": "node", "reasons": []},
            )
        node.detach("not polled for 61.0s")  # the registration thread stopped: it stays so
        detached = readiness.get("/readyz")
        assert (detached.status_code, detached.json["reasons"]) == (
            503,
            ["not registered with the hub: detached (not polled for 61.0s), registering again"],
        )


@pytest.mark.parametrize("mistake", ["secret", "advertise_url"])
def test_a_refused_node_says_why_once_and_is_not_ready(
    hub_app: Flask,
    hub_url: str,
    node: NodeState,
    serve_node: ServedNodes,
    caplog: pytest.LogCaptureFixture,
    mistake: str,
) -> None:
    with served(create_node_app(node, SECRET), "node") as url:
        secret = "not-the-secret" if mistake == "secret" else SECRET
        advertised = stopped_url(serve_node) if mistake == "advertise_url" else url
        calls = hub_app.extensions["registrations"]
        with (
            caplog.at_level(logging.INFO, logger="spawn.registration"),
            registering(node, hub_url, advertised, secret),
        ):
            wait_until(lambda: calls["registrations"] >= 3, timeout=15, what="3 attempts")
        reason = node.registration_problem
        if mistake == "secret":
            assert reason == SECRET_REFUSED
        else:
            assert reason is not None
            assert reason.startswith(
                f"registration refused: url: the hub could not reach this node at {advertised}"
            )
        assert not node.registered.is_set()
        ready = create_node_app(node, SECRET).test_client().get("/readyz")
        assert (ready.status_code, ready.json["reasons"]) == (
            503,
            [f"not registered with the hub: {reason}"],
        )
        # one line however many retries, with what to fix and where
        [warned] = warnings_of(caplog)
        assert warned.startswith(f"{reason} hub={hub_url} url={advertised} retry_in=")
