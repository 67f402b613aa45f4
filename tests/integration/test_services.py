"""The test servers themselves: each answers the way the suite relies on (a Cassandra killed
and started again keeping what it held is the cluster tier's, tests/cluster/ring.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis
import sqlalchemy
from cassandra.cluster import Session

from tests.services.cassandra import CassandraEndpoint, local_cluster


@contextmanager
def cql(host: str, port: int) -> Iterator[Session]:
    cluster = local_cluster(host, port)
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def test_cassandra_answers_cql(cassandra_service: CassandraEndpoint) -> None:
    assert cassandra_service.contact_points == f"127.0.0.1:{cassandra_service.port}"
    with cql(cassandra_service.host, cassandra_service.port) as session:
        row = session.execute("select release_version from system.local").one()
    assert row.release_version.startswith("5.0")


def test_redis_answers_and_keeps_a_stream(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    stream = f"test-services-{uuid.uuid4().hex}"
    try:
        assert client.ping()
        client.xadd(stream, {"item": "1"})
        client.xadd(stream, {"item": "2"})
        assert client.xlen(stream) == 2
    finally:
        client.delete(stream)
        client.close()


def test_postgres_creates_a_database_and_answers_in_it(postgres_url: str) -> None:
    name = f"test_services_{uuid.uuid4().hex}"
    server = sqlalchemy.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with server.connect() as connection:
        connection.execute(sqlalchemy.text(f"create database {name}"))
    database = sqlalchemy.create_engine(sqlalchemy.make_url(postgres_url).set(database=name))
    try:
        with database.begin() as connection:
            connection.execute(sqlalchemy.text("create table t (n int)"))
            connection.execute(sqlalchemy.text("insert into t values (1), (2)"))
            total = connection.execute(sqlalchemy.text("select sum(n) from t")).scalar_one()
        assert total == 3
    finally:
        database.dispose()
        with server.connect() as connection:
            connection.execute(sqlalchemy.text(f"drop database {name}"))
        server.dispose()
