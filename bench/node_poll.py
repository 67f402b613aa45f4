"""A node's cost per poll: the server time of the hub's steady `GET /subscribers`.

The hub polls every node every ~2 s, so what the node's HTTP face adds to each poll is
paid all the time. Times polls through Flask's test client (no sockets: the node's WSGI
app alone) on a node with no changes to report, as most polls find it, against a bare
Flask app answering the same JSON, the floor of the same run.

    .venv/bin/python -m bench.node_poll [--polls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from flask import Flask, jsonify
from flask.testing import FlaskClient

from blackwidow.core.node_protocol import (
    EPOCH_HEADER,
    GENERATION_HEADER,
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

SECRET = "bench-secret"
GENERATION = 1


def per_poll(client: FlaskClient, headers: dict[str, str], polls: int) -> float:
    """Microseconds per poll, each answered 200."""
    started = time.perf_counter()
    for _ in range(polls):
        response = client.get("/subscribers", headers=headers)
        assert response.status_code == 200, response.data
    return (time.perf_counter() - started) / polls * 1e6


def bare_app(answer: dict) -> FlaskClient:
    app = Flask("bare")
    app.add_url_rule("/subscribers", "poll", lambda: jsonify(answer))
    return app.test_client()


def best_of_alternating(rounds: int, *measures: Callable[[], float]) -> list[float]:
    """Each measure's best round, the rounds interleaved so a busy machine slows all alike."""
    rounds_taken = [[measure() for measure in measures] for _ in range(rounds)]
    return [min(taken) for taken in zip(*rounds_taken, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = SqliteStore(str(Path(directory) / "items.db"))
        pool = DataSourcePool(opener(SourceContext(GuardedFetcher(), 60.0)), store)
        node = NodeState(pool, time.monotonic)
        node.mark_registered(1, GENERATION)
        client = create_node_app(node, SECRET).test_client()
        headers = {
            "Authorization": f"Bearer {SECRET}",
            GENERATION_HEADER: str(GENERATION),
            SHARD_HEADER: "0/1",
            EPOCH_HEADER: "7",
        }
        answer = client.get("/subscribers", headers=headers).json
        headers[SINCE_HEADER] = answer["cursor"]
        bare = bare_app(answer)
        per_poll(client, headers, args.polls)  # warm both
        per_poll(bare, headers, args.polls)
        node_us, bare_us = best_of_alternating(
            args.rounds,
            lambda: per_poll(client, headers, args.polls),
            lambda: per_poll(bare, headers, args.polls),
        )
        store.close()
    samples = f"best of {args.rounds} rounds of {args.polls} polls"
    print(f"node poll: {node_us:.0f} us; bare Flask answering the same JSON: {bare_us:.0f} us")
    print(f"node / bare: {node_us / bare_us:.2f} ({samples})")


if __name__ == "__main__":
    main()
