"""cassandra://hosts/keyspace?options parsing: what each part becomes, and what is refused."""

from __future__ import annotations

import pytest
from cassandra import ConsistencyLevel

from blackwidow.core.store.cassandra.config import DEFAULT_PORT, parse


def test_defaults_suit_one_node_and_quorum_with_replication() -> None:
    config = parse("db1,db2/items")
    assert (config.hosts, config.port, config.keyspace) == (("db1", "db2"), DEFAULT_PORT, "items")
    assert config.consistency == ConsistencyLevel.LOCAL_QUORUM
    assert config.replication_cql() == "{'class': 'SimpleStrategy', 'replication_factor': '1'}"


@pytest.mark.parametrize(
    ("rest", "hosts", "port"),
    [
        ("127.0.0.1:19042/ks", ("127.0.0.1",), 19042),
        ("a,b:9043/ks", ("a", "b"), 9043),
        ("a:9043,b:9043/ks", ("a", "b"), 9043),
    ],
)
def test_hosts_share_one_port(rest: str, hosts: tuple[str, ...], port: int) -> None:
    config = parse(rest)
    assert (config.hosts, config.port) == (hosts, port)


def test_options_set_consistency_replication_and_timeouts() -> None:
    config = parse(
        "db/ks?consistency=one&replication=dc1:3,dc2:2&connect_timeout=2.5&request_timeout=0.5"
    )
    assert config.consistency == ConsistencyLevel.ONE
    assert config.replication_cql() == (
        "{'class': 'NetworkTopologyStrategy', 'dc1': '3', 'dc2': '2'}"
    )
    assert config.replication_map() == {
        "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
        "dc1": "3",
        "dc2": "2",
    }
    assert (config.connect_timeout, config.request_timeout) == (2.5, 0.5)
    assert parse("db/ks").request_timeout == 5.0
    assert parse("db/ks?replication=3").replication == (("replication_factor", 3),)


@pytest.mark.parametrize(
    ("rest", "message"),
    [
        ("db", "keyspace"),
        ("db/", "keyspace"),
        ("db/bad-name", "keyspace"),
        ("db/ks;DROP", "keyspace"),
        ("/ks", "at least one host"),
        ("db:99999/ks", "bad port"),
        ("db:x/ks", "bad port"),
        ("a:1,b:2/ks", "same port"),
        ("db/ks?consistency=most", "consistency 'most'"),
        ("db/ks?replication=0", "replication factor"),
        ("db/ks?replication=dc1", "replication"),
        ("db/ks?connect_timeout=-1", "connect_timeout"),
        ("db/ks?request_timeout=0", "request_timeout '0'"),
        ("db/ks?colour=red", "unknown option 'colour'"),
    ],
)
def test_bad_urls_say_which_part_is_wrong(rest: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(rest)
