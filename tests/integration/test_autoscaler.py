"""A scripted autoscaler, used the way KEDA or a process manager uses the hub: each round it
reads `GET /api/v1/nodes/count`, starts nodes while fewer are active than desired, and stops
the busiest with SIGTERM while more are. Through scale-outs and scale-ins against a local
feed server, the totals show nothing lost and nothing stored twice, item limits held
exactly, no `node.dead` event (a node.left per scale-in), health `ok` once each round
settled, and a desired count that holds still while the crawlers do.

It prints, per scale-in, the seconds from the SIGTERM to every crawler of the stopped node
running elsewhere (docs/operations.md "Scaling in")."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from tests.integration.conftest import Cluster, post_numbers
from tests.servers.webhook_receiver import WebhookReceiver
from tests.support import wait_until

SCALING = {
    "BLACKWIDOW_NODE_CAPACITY": "2",  # two data sources a node: six crawlers want three
    "BLACKWIDOW_MIN_NODES": "2",
    "BLACKWIDOW_WEBHOOK_SECRET": "autoscaler-webhook-secret",
}
STEADY = 4  # crawlers enabled throughout, two with an item limit
LIMIT = 25
EVERY = 1.0  # seconds per new feed entry: the 50 a feed shows span longer than the test


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


class Autoscaler:
    """What an autoscaler does with the count, and nothing more: it knows the hub's URL."""

    def __init__(self, c: Cluster) -> None:
        self.c = c
        self.gaps: list[float] = []  # seconds from a SIGTERM to the node's crawlers elsewhere

    def count(self) -> dict[str, int]:
        return self.c.call("GET", "/api/v1/nodes/count").json()

    def round(self, token: str, crawlers: list[int]) -> None:
        count = self.count()
        if count["active"] < count["desired"]:
            for _ in range(count["desired"] - count["active"]):
                self.c.add_node()
            self.c.wait_for_nodes(count["desired"])
        for _ in range(count["active"] - count["desired"]):
            self.stop_busiest(token, crawlers)

    def stop_busiest(self, token: str, crawlers: list[int]) -> None:
        nodes = self.c.call("GET", "/api/v1/nodes", self.c.admin_token).json()
        live = [n for n in nodes if n["state"] == "active"]
        busiest = max(live, key=lambda n: n["subscribers"])
        victim = next(p for p in self.c.nodes if p.url == busiest["url"])
        held = [
            x["id"]
            for x in (self.c.get(token, i) for i in crawlers)
            if x["node_id"] == busiest["id"] and x["state"] == "running"
        ]
        assert held, "the busiest node runs crawlers"
        stopped_at = time.monotonic()
        victim.terminate()
        wait_until(
            lambda: moved(self.c, token, held, busiest["id"]),
            what=f"the crawlers of node {busiest['id']} running elsewhere",
        )
        self.gaps.append(time.monotonic() - stopped_at)
        assert victim.wait_stopped(time.monotonic() + 30) == 0
        self.c.nodes.remove(victim)
        wait_until(
            lambda: node_state(self.c, busiest["id"]) in (None, "left"),
            what=f"node {busiest['id']} to have left",
        )


def moved(c: Cluster, token: str, crawler_ids: list[int], away_from: int) -> bool:
    """Every one runs on another node, or has reached its limit (it runs nowhere)."""
    for crawler_id in crawler_ids:
        crawler = c.get(token, crawler_id)
        if crawler["state"] == "limit_reached":
            continue
        if crawler["state"] != "running" or crawler["node_id"] in (None, away_from):
            return False
    return True


def node_state(c: Cluster, node_id: int) -> str | None:
    nodes = c.call("GET", "/api/v1/nodes", c.admin_token).json()
    return next((n["state"] for n in nodes if n["id"] == node_id), None)


def settled(c: Cluster, token: str, crawlers: list[int]) -> bool:
    """Every enabled crawler running (or at its limit), and health ok."""
    states = {c.get(token, i)["state"] for i in crawlers}
    health = c.call("GET", "/api/v1/health").json()
    return states <= {"running", "limit_reached"} and health["status"] == "ok"


def steady_count(scaler: Autoscaler, c: Cluster) -> dict[str, int]:
    """The count over three monitor passes, which must not change while nothing does."""
    seen: list[dict[str, int]] = []
    cycles: list[str | None] = []

    def three_passes() -> bool:
        cycle = c.call("GET", "/api/v1/health").json()["monitor"]["last_cycle_at"]
        if not cycles or cycles[-1] != cycle:
            cycles.append(cycle)
            seen.append(scaler.count())
        return len(cycles) > 3

    wait_until(three_passes, what="three monitor passes")
    assert all(count == seen[0] for count in seen), seen
    return seen[0]


def toggle(c: Cluster, token: str, crawler_ids: list[int], enabled: bool) -> None:
    for crawler_id in crawler_ids:
        body = {"enabled": enabled}
        answer = c.call("PATCH", f"/api/v1/crawlers/{crawler_id}", token, json=body)
        assert answer.status_code == 200, answer.text


def published(c: Cluster, crawler: dict[str, Any]) -> int:
    """Entries the crawler's feed has published so far, asked of the feed server."""
    return requests.get(crawler["query"]["feeds"][0], timeout=5).text.count("<item>")


@pytest.mark.slow
def test_a_scripted_autoscaler_scales_out_and_in_losing_nothing(
    cluster: Callable[..., Cluster], receiver: WebhookReceiver
) -> None:
    c = cluster(2, BLACKWIDOW_WEBHOOK_URL=f"{receiver.url}/cluster", **SCALING)
    scaler = Autoscaler(c)
    token = c.user()
    records = {}
    for n in range(STEADY):
        limit = {"item_limit": LIMIT} if n < 2 else {}
        crawler = c.crawler(token, [c.feed(f"steady{n}", items=5, every=EVERY)], **limit)
        records[crawler["id"]] = crawler
    steady = list(records)
    wait_until(lambda: settled(c, token, steady), what="the steady crawlers running")
    assert steady_count(scaler, c) == {"active": 2, "desired": 2}

    load = [c.crawler(token, [c.feed(f"load{n}", items=5, every=EVERY)])["id"] for n in range(2)]
    rounds = [(True, 3), (False, 2), (True, 3), (False, 2)]  # load on or off: nodes wanted
    for enabled, wanted in rounds:
        toggle(c, token, load, enabled)
        running = steady + (load if enabled else [])
        assert scaler.count()["desired"] == wanted
        scaler.round(token, running)
        wait_until(
            lambda now=running: settled(c, token, now), what="the round to settle, health ok"
        )
        assert steady_count(scaler, c) == {"active": wanted, "desired": wanted}

    attempted = {i: published(c, records[i]) for i in steady}
    wait_until(
        lambda: all(
            set(range(1, min(attempted[i], LIMIT if i in steady[:2] else attempted[i]) + 1))
            <= set(post_numbers(c.items(token, i)))
            for i in steady
        ),
        what="every entry published to the steady crawlers' feeds stored",
    )
    toggle(c, token, [*steady, *load], False)  # their counts now stand still
    final = {i: c.items(token, i) for i in [*steady, *load]}
    wait_until(
        lambda: all(c.get(token, i)["items_collected"] == len(final[i]) for i in final),
        what="every count shown to equal what the store holds",
    )
    duplicated = sum(len(items) - len({x["id"] for x in items}) for items in final.values())
    lost = sum(
        len(set(range(1, max(post_numbers(items)) + 1)) - set(post_numbers(items)))
        for items in final.values()
    )
    limited = [len(final[i]) for i in steady[:2]]
    events = [e["type"] for e in receiver.events("/cluster")]
    print(
        f"autoscaler: rounds {len(rounds)}, scale-ins {len(scaler.gaps)}, SIGTERM to crawlers"
        f" elsewhere {', '.join(f'{gap:.2f}' for gap in scaler.gaps)} s, lost {lost},"
        f" duplicated {duplicated}, limited {limited} of {LIMIT},"
        f" node.left {events.count('node.left')}, node.dead {events.count('node.dead')}"
    )
    assert (lost, duplicated) == (0, 0)
    assert all(stored <= LIMIT for stored in limited)
    wait_until(lambda: receiver.events("/cluster"), what="the alert events delivered")
    wait_until(
        lambda: [e["type"] for e in receiver.events("/cluster")].count("node.left") == 2,
        what="a node.left per scale-in",
    )
    assert "node.dead" not in [e["type"] for e in receiver.events("/cluster")]
    assert c.call("GET", "/api/v1/health").json()["status"] == "ok"
