"""Alerts from a real hub and nodes to a local receiver: a killed node is reported dead to the
cluster's webhook, and a user's spent budget to theirs (and the cluster's), signed."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator

import pytest

from tests.integration.conftest import Cluster
from tests.servers.webhook_receiver import WebhookReceiver
from tests.support import wait_until

CLUSTER_SECRET = "cluster-webhook-secret"
ANA_SECRET = "ana-webhook-secret"


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


def of_type(receiver: WebhookReceiver, path: str, kind: str) -> list[dict]:
    return [e for e in receiver.events(path) if e["type"] == kind]


def test_a_killed_node_and_a_spent_budget_reach_the_webhooks(
    cluster: Callable[..., Cluster], receiver: WebhookReceiver
) -> None:
    running = cluster(
        2,
        BLACKWIDOW_WEBHOOK_URL=f"{receiver.url}/cluster",
        BLACKWIDOW_WEBHOOK_SECRET=CLUSTER_SECRET,
    )
    body = {"name": "ana", "item_limit": 5}
    ana = running.call("POST", "/api/v1/users", running.admin_token, json=body).json()
    token, ana_id = ana["token"], ana["id"]
    hook = running.call(
        "POST",
        f"/api/v1/users/{ana_id}/webhooks",
        token,
        json={"url": f"{receiver.url}/ana", "secret": ANA_SECRET},
    )
    assert hook.status_code == 201, hook.text
    running.crawler(token, [running.feed("tech", items=12)])

    exhausted = wait_until(
        lambda: of_type(receiver, "/ana", "budget.exhausted"), what="budget.exhausted for ana"
    )
    assert exhausted[0]["user_id"] == ana_id and exhausted[0]["item_limit"] == 5
    wait_until(lambda: of_type(receiver, "/cluster", "budget.exhausted"), what="cluster copy")

    victim = running.nodes[0]
    victim.kill()
    dead = wait_until(lambda: of_type(receiver, "/cluster", "node.dead"), what="node.dead")
    assert dead[0]["url"] == victim.url
    assert of_type(receiver, "/ana", "node.dead") == []  # node events are the cluster's only

    for got in receiver.received:
        secret = ANA_SECRET if got.path == "/ana" else CLUSTER_SECRET
        digest = hmac.new(secret.encode(), got.body, hashlib.sha256).hexdigest()
        assert got.headers["X-Blackwidow-Signature"] == f"sha256={digest}"
    deliveries = running.call("GET", f"/api/v1/users/{ana_id}/webhooks/deliveries", token)
    assert "budget.exhausted" in {d["type"] for d in deliveries.json()}
