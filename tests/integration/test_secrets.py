"""Secrets never reach logs or API output: a real cluster, used and misused, then every process's
log and every answer it gave searched for the admin token, the cluster secret and user tokens.

The one allowed appearance is the answer that creates a user, which shows its token once.
Failure messages name the secret and the file or answer, never the secret itself.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests

from blackwidow.demo import processes
from tests.integration.conftest import Cluster
from tests.support import wait_until


@dataclass
class Answers:
    """Every HTTP answer the test received, by a label saying which call it was."""

    bodies: dict[str, str] = field(default_factory=dict)

    def keep(self, label: str, response: requests.Response) -> requests.Response:
        assert label not in self.bodies, label
        self.bodies[label] = response.text
        return response


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def leaks(secrets: dict[str, str], texts: dict[str, str]) -> list[str]:
    """'<secret name> in <text name>' for every secret found in a text; never the secret."""
    return [
        f"{name} in {where}"
        for name, secret in secrets.items()
        for where, text in texts.items()
        if secret in text
    ]


def use_the_cluster(c: Cluster, answers: Answers) -> dict[str, str]:
    """Users, crawlers and items flowing, read back every way the API allows; the user tokens."""
    tokens = {}
    for name in ("ana", "bob"):
        created = answers.keep(
            f"user creation of {name}",
            c.call("POST", "/api/v1/users", c.admin_token, json={"name": name, "item_limit": 50}),
        )
        assert created.status_code == 201, created.text
        tokens[name] = created.json()["token"]
    crawler = c.crawler(tokens["ana"], [c.feed("tech", items=5)])
    wait_until(lambda: len(c.items(tokens["ana"], crawler["id"])) == 5, what="5 items stored")
    wait_until(
        lambda: c.get(tokens["ana"], crawler["id"])["items_collected"] == 5,
        what="the monitor to record 5 items",
    )
    path = f"/api/v1/crawlers/{crawler['id']}"
    for label, token in [("ana", tokens["ana"]), ("admin", c.admin_token)]:
        answers.keep(f"crawler listing as {label}", c.call("GET", "/api/v1/crawlers", token))
        answers.keep(f"crawler read as {label}", c.call("GET", path, token))
        answers.keep(f"items as {label}", c.call("GET", f"{path}/items", token))
        answers.keep(f"conversation as {label}", c.call("GET", "/api/v1/conversations/x", token))
    answers.keep("crawler change", c.call("PATCH", path, tokens["ana"], json={"name": "renamed"}))
    answers.keep("nodes listing", c.call("GET", "/api/v1/nodes", c.admin_token))
    for public in ("/api/v1/nodes/count", "/api/v1/health", "/healthz", "/api/v1/openapi.json"):
        answers.keep(public, c.call("GET", public))
    for node in c.nodes:
        answers.keep(f"{node.name} /healthz", requests.get(f"{node.url}/healthz", timeout=5))
    return tokens


def misuse_the_cluster(c: Cluster, answers: Answers, tokens: dict[str, str]) -> None:
    """Calls that must fail, each carrying a real secret where it does not belong, so a log of
    refused credentials would show it."""
    secret = c.env["BLACKWIDOW_CLUSTER_SECRET"]
    wrong = {
        "a near miss of ana's token": f"{tokens['ana']}x",
        "bob's token": tokens["bob"],
        "the cluster secret": secret,
        "the admin token": c.admin_token,
    }
    crawler_id = c.call("GET", "/api/v1/crawlers", tokens["ana"]).json()[0]["id"]
    for label, token in wrong.items():
        answers.keep(
            f"ana's crawler with {label}", c.call("GET", f"/api/v1/crawlers/{crawler_id}", token)
        )
    answers.keep(
        "user creation with ana's token",
        c.call("POST", "/api/v1/users", tokens["ana"], json={"name": "eve"}),
    )
    answers.keep("node listing with bob's token", c.call("GET", "/api/v1/nodes", tokens["bob"]))
    registration = {"url": "http://127.0.0.1:9", "capacity": 1}
    for label, token in [
        ("the admin token", c.admin_token),
        ("ana's token", tokens["ana"]),
        ("a near miss", f"{secret}x"),
    ]:
        refused = answers.keep(
            f"node registration with {label}",
            c.call("POST", "/api/v1/nodes", token, json=registration),
        )
        assert refused.status_code == 401, refused.text
    node = c.nodes[0]
    spec = {"crawler_id": 1, "user_id": 1, "source": "rss", "query": {"feeds": ["http://x/"]}}
    for label, headers in [
        ("the admin token", bearer(c.admin_token)),
        ("ana's token", bearer(tokens["ana"])),
        ("a near miss", bearer(f"{secret}x")),
        ("the cluster secret and no generation", bearer(secret)),
    ]:
        for method, path in [
            ("PUT", "/subscribers/1"),
            ("GET", "/subscribers"),
            ("DELETE", "/subscribers/1"),
        ]:
            response = requests.request(
                method, f"{node.url}{path}", json=spec, headers=headers, timeout=5
            )
            answers.keep(f"{node.name} {method} {path} with {label}", response)
            assert 400 <= response.status_code < 500, response.text


def start_a_node_with_a_wrong_secret(c: Cluster, wrong_secret: str) -> processes.Running:
    """A node whose registrations the hub refuses: it says why once and keeps trying."""
    env = {**c.env, "BLACKWIDOW_CLUSTER_SECRET": wrong_secret}
    args = ("blackwidow", "spawn", "--hub", c.hub_url, "--port", "0")
    rogue = processes.start("rogue-node", args, env, c.workdir)
    wait_until(
        lambda: (
            "registration refused: cluster secret does not match the hub's"
            in rogue.log_path.read_text()
        ),
        what="the hub to refuse the rogue node's registration",
    )
    return rogue


def logs_of(workdir: Path, stopped: list[processes.Running]) -> dict[str, str]:
    """Every process's output: its stderr log file in the workdir, and what it wrote to stdout
    after the URL line (read once it has stopped, so nothing is still being written)."""
    logs = {path.name: path.read_text(errors="replace") for path in sorted(workdir.glob("*.log"))}
    for running in stopped:
        assert running.process.poll() is not None, f"{running.name} still runs"
        assert running.process.stdout is not None
        logs[f"{running.name} stdout"] = running.process.stdout.read()
    return logs


def test_secrets_never_reach_logs_or_api_output(cluster: Callable[..., Cluster]) -> None:
    c = cluster(2)
    answers = Answers()
    tokens = use_the_cluster(c, answers)
    misuse_the_cluster(c, answers, tokens)
    rogue_secret = secrets.token_urlsafe(16)
    rogue = start_a_node_with_a_wrong_secret(c, rogue_secret)
    rogue.stop()
    c.stop()
    watched = {
        "the admin token": c.admin_token,
        "the cluster secret": c.env["BLACKWIDOW_CLUSTER_SECRET"],
        "the rogue node's secret": rogue_secret,
        **{f"{name}'s token": token for name, token in tokens.items()},
    }
    assert all(len(secret) >= 16 for secret in watched.values())  # no accidental substrings

    # Plain values only in the asserts below: pytest would print a text holding a secret.
    logs = logs_of(c.workdir, [c.feeds, c.hub, *c.nodes, rogue])  # type: ignore[list-item]
    missing = sorted(
        {"feeds.log", "hub.log", "node1.log", "node2.log", "rogue-node.log"} - logs.keys()
    )
    assert not missing, f"no output from {missing}"
    hub_listening = "listening url=" in logs["hub.log"]
    node_registered = "node registered" in logs["node1.log"]
    rogue_refused = "registration refused: cluster secret" in logs["rogue-node.log"]
    assert hub_listening and node_registered and rogue_refused, "the logs lack expected lines"
    found = leaks(watched, logs)
    assert not found, f"secrets in process output: {found}"

    shown = set(leaks(watched, answers.bodies))
    expected = {f"{name}'s token in user creation of {name}" for name in tokens}
    extra, hidden = sorted(shown - expected), sorted(expected - shown)
    assert not extra, f"secrets in API answers other than their user's creation: {extra}"
    assert not hidden, f"user creation answers without their token: {hidden}"
    searched = len(answers.bodies)
    assert searched >= 35, f"only {searched} answers searched"
