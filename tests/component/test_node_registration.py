"""The hub as an SSRF path: node registration, generations, allowed networks, no redirects;
and the cluster id a registration answers with, which a node process keeps to the first."""

from __future__ import annotations

import ipaddress
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import delete, update
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.app import create_app
from blackwidow.core import node_networks
from blackwidow.core.store.sqlite import SqliteStore
from blackwidow.models import ClusterIdentity
from blackwidow.node_client import NodeClient, NodeTarget, NodeUnreachable
from sources.fetch.fetcher import GuardedFetcher
from sources.registry import opener
from sources.source_type import SourceContext
from spawn.app import create_node_app
from spawn.node import NodeState
from spawn.pool.source_pool import DataSourcePool
from tests.component.conftest import ADMIN, SECRET, bearer
from tests.component.test_misconfiguration import registering
from tests.servers.hostile_http import HostileServer
from tests.support import served, wait_until


def register(client, url: str):
    return client.post("/api/v1/nodes", json={"url": url}, headers=bearer(SECRET))


def test_each_registration_gets_a_new_generation_for_the_same_node(client, serve_node):
    url = serve_node()
    generations = [register(client, url).json["generation"] for _ in range(3)]

    assert generations == sorted(set(generations)) and len(generations) == 3
    listed = client.get("/api/v1/nodes", headers=bearer(ADMIN)).json
    assert [(n["url"], n["generation"]) for n in listed] == [(url, generations[-1])]


@pytest.fixture
def restricted(hub_app: Flask) -> Iterator[Flask]:
    """The same hub, allowing node URLs only in 127.0.0.0/8 and 10.0.0.0/8."""
    networks = tuple(ipaddress.ip_network(n) for n in ("127.0.0.0/8", "10.0.0.0/8"))
    settings = hub_app.extensions["blackwidow"].settings.replace(node_networks=networks)
    yield create_app(settings)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254",  # cloud metadata
        "http://192.168.1.10:8000",
        "http://[::1]:8000",  # loopback, but IPv6: not in the listed IPv4 networks
        "http://no-such-host.invalid:8000",
    ],
)
def test_node_urls_outside_the_configured_networks_are_refused(restricted: Flask, url: str):
    client = restricted.test_client()

    response = register(client, url)

    assert response.status_code == 422
    assert response.json["error"]["field"] == "url"
    assert client.get("/api/v1/nodes", headers=bearer(ADMIN)).json == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_node_urls_inside_the_configured_networks_are_accepted(
    restricted: Flask, serve_node, host: str
):
    url = serve_node().replace("127.0.0.1", host)
    assert register(restricted.test_client(), url).status_code == 201


def test_an_address_inside_the_configured_networks_passes_their_check():
    """Only the check: the hub's call back would go to the address (not one of this machine's)."""
    networks = tuple(ipaddress.ip_network(n) for n in ("127.0.0.0/8", "10.0.0.0/8"))
    node_networks.check_registration("http://10.1.2.3:8000", networks)


def test_the_hub_never_follows_a_redirect_from_a_node() -> None:
    with HostileServer() as server:
        target = server.url("/rss")
        node = NodeTarget(1, server.url(f"/redirect?to={target}"), generation=1)

        with pytest.raises(NodeUnreachable, match="302"):
            NodeClient(SECRET, timeout=5).poll(node, None)

        assert len(server.requests_to("/redirect")) == 1
        assert server.requests_to("/rss/subscribers") == server.requests_to("/rss") == []


def test_the_hub_checks_the_address_it_connects_to() -> None:
    """A node URL that resolved inside the networks at registration may not later lead out."""
    with HostileServer() as server:
        client = NodeClient(SECRET, timeout=5, networks=(ipaddress.ip_network("10.0.0.0/8"),))

        with pytest.raises(NodeUnreachable, match="outside BLACKWIDOW_NODE_NETWORKS"):
            client.poll(NodeTarget(1, server.base_url, generation=1), None)

        assert server.requests_to("/subscribers") == []


def test_the_registration_answer_names_the_cluster_the_database_is(client, serve_node, sessions):
    url = serve_node()
    answers = [register(client, url).json for _ in range(2)]
    with sessions() as session:
        (identity,) = session.query(ClusterIdentity).all()
    assert [answer["cluster_id"] for answer in answers] == [identity.cluster_id] * 2
    assert str(uuid.UUID(identity.cluster_id)) == identity.cluster_id
    assert set(answers[0]) == {"id", "url", "generation", "cluster_id"}


def test_a_database_whose_identity_is_gone_is_a_new_cluster(client, serve_node, sessions):
    url = serve_node()
    before = register(client, url).json["cluster_id"]
    with sessions.begin() as session:
        session.execute(delete(ClusterIdentity))
    after = register(client, url).json["cluster_id"]
    assert after != before
    assert register(client, url).json["cluster_id"] == after  # made once, then kept


@pytest.fixture
def hub_url(hub_app: Flask) -> Iterator[str]:
    with served(hub_app, "hub") as url:
        yield url


def test_a_node_process_never_joins_a_second_cluster(
    hub_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    """A node process registered with one cluster, whose hub then answers for another (its
    database replaced), stays unready saying why: its files and the stopped runs it still
    reports are the first cluster's."""
    joined: list[str] = []
    store = SqliteStore(str(tmp_path / "node-items.db"))
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), deadline=5.0)
    pool = DataSourcePool(opener(SourceContext(fetcher, 60.0)), store)
    node = NodeState(pool, clock=time.monotonic, join=joined.append)
    with served(create_node_app(node, SECRET), "node") as url, registering(node, hub_url, url):
        wait_until(node.registered.is_set, timeout=10, what="the first registration")
        first = node.cluster_id
        assert joined == [first]
        other = str(uuid.uuid4())
        with sessions.begin() as session:
            session.execute(update(ClusterIdentity).values(cluster_id=other))
        node.detach("not polled for 61.0s")

        def refused() -> str | None:
            problem = node.registration_problem or ""
            return problem if "cluster" in problem else None

        problem = wait_until(refused, timeout=10, what="the node to refuse the other cluster")
        assert problem == (
            f"registration not taken up: the hub is of cluster {other}, this node process"
            f" works for cluster {first}: restart the node to join the hub's"
        )
        assert not node.registered.is_set() and joined == [first]
    store.close()
