"""`blackwidow demo`: a hub, two nodes and a sample-feed server on loopback, offline.

It creates a user and four crawlers (two share a feed set, so one data source), prints the
dashboard's sign-in link and a `curl` call, then a one-line summary per crawler as items
arrive. Part-way through (or when Enter is pressed) it kills one node, kill -9, so the
dashboard shows the hub declaring it dead and moving its crawlers to the other node.
"""

from __future__ import annotations

import secrets
import select
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from blackwidow.demo import processes

POLL_INTERVAL = "1"
SUMMARY_INTERVAL = 2.0
STARTUP_TIMEOUT = 30.0
KILL_NODE_AFTER = 40.0  # seconds of summaries before a node is killed; Enter kills it sooner


def _environment(workdir: Path) -> dict[str, str]:
    return {
        "BLACKWIDOW_DATABASE_URL": f"sqlite:///{workdir / 'hub.db'}",
        "BLACKWIDOW_STORE": f"sqlite:///{workdir / 'items.db'}",
        "BLACKWIDOW_ADMIN_TOKEN": secrets.token_urlsafe(24),
        "BLACKWIDOW_CLUSTER_SECRET": secrets.token_urlsafe(24),
        "BLACKWIDOW_POLL_INTERVAL": POLL_INTERVAL,
        "BLACKWIDOW_ACCEPTABLE_PAUSE": "2",
        "BLACKWIDOW_ORPHAN_AFTER": "15",
        "BLACKWIDOW_DETACH_AFTER": "30",
        "BLACKWIDOW_FEED_INTERVAL": "2",
        "BLACKWIDOW_FETCH_ALLOW": "127.0.0.1",
    }


def _crawlers(feeds: str) -> list[dict[str, Any]]:
    tech = f"{feeds}/feeds/tech.xml?items=5&every=2"
    return [
        {"name": "tech", "source": "rss", "query": {"feeds": [tech]}},
        {
            "name": "tech-python",
            "source": "rss",
            "query": {"feeds": [tech], "keywords": ["python"]},
        },
        {
            "name": "science",
            "source": "rss",
            "query": {"feeds": [f"{feeds}/feeds/science.xml?every=3"]},
        },
        {
            "name": "world-and-sports",
            "source": "rss",
            "item_limit": 40,
            "query": {"feeds": [f"{feeds}/feeds/world.xml?every=1", f"{feeds}/feeds/sports.xml"]},
        },
    ]


def _wait_for_nodes(hub: str, count: int) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if requests.get(f"{hub}/api/v1/nodes/count", timeout=5).json()["active"] >= count:
            return
        time.sleep(0.2)
    raise RuntimeError("nodes did not register in time")


def _summary(hub: str, token: str) -> list[str]:
    auth = {"Authorization": f"Bearer {token}"}
    lines = []
    for crawler in requests.get(f"{hub}/api/v1/crawlers", headers=auth, timeout=5).json():
        items = requests.get(
            f"{hub}/api/v1/crawlers/{crawler['id']}/items?limit=1", headers=auth, timeout=5
        ).json()["items"]
        latest = items[0]["title"] if items else "-"
        lines.append(
            f"  {crawler['name']:<18} {crawler['state']:<13} node={crawler['node_id'] or '-':<3}"
            f" items={crawler['items_collected']:<5} latest: {latest}"
        )
    return lines


def _setup(hub: str, admin_token: str, feeds: str) -> tuple[str, int]:
    """Create the demo user and crawlers; return the user's token and the first crawler."""
    admin = {"Authorization": f"Bearer {admin_token}"}
    user = requests.post(
        f"{hub}/api/v1/users", json={"name": "demo", "item_limit": 1000}, headers=admin, timeout=5
    ).json()
    auth = {"Authorization": f"Bearer {user['token']}"}
    made = []
    for crawler in _crawlers(feeds):
        answer = requests.post(f"{hub}/api/v1/crawlers", json=crawler, headers=auth, timeout=5)
        answer.raise_for_status()
        made.append(answer.json()["id"])
    return user["token"], made[0]


def _welcome(hub: str, admin_token: str, user_token: str, crawler_id: int) -> list[str]:
    """How to look: the dashboard's sign-in link carries the admin token in its fragment,
    which browsers never send, and the page wipes it from the address bar (docs/dashboard.md:
    Signing in); the analysts' command tails a crawler (docs/cli.md)."""
    command = sys.argv[0] if Path(sys.argv[0]).name == "blackwidow" else "blackwidow"
    return [
        f"dashboard  {hub}/signin#token={admin_token}",
        "           (opens the sign-in form filled with the admin token; press Sign in)",
        f"api        curl -H 'Authorization: Bearer {user_token}' {hub}/api/v1/crawlers",
        f"cli        BLACKWIDOW_HUB_URL={hub} BLACKWIDOW_TOKEN={user_token}"
        f" {command} items {crawler_id} --follow",
        "press Enter to kill a node (kill -9) and watch its crawlers move on the dashboard",
    ]


def _enter_pressed() -> bool:
    """A line typed on a terminal, without waiting; never when stdin is not one."""
    if not sys.stdin.isatty():
        return False
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(ready) and sys.stdin.readline() is not None


def run_demo(duration: float | None, kill_node_after: float = KILL_NODE_AFTER) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="blackwidow-demo-"))
    env = _environment(workdir)
    running: list[processes.Running] = []

    def start(name: str, *args: str) -> None:
        running.append(processes.start(name, args, env, workdir))

    try:
        start("feeds", "blackwidow.demo.feed_server", "--port", "0")
        start("hub", "blackwidow", "hub", "--port", "0")
        hub = running[-1].url
        for n in (1, 2):
            start(f"node{n}", "blackwidow", "spawn", "--hub", hub, "--port", "0")
        print(f"hub {hub}  feeds {running[0].url}  logs {workdir}", flush=True)
        _wait_for_nodes(hub, 2)
        token, first_crawler = _setup(hub, env["BLACKWIDOW_ADMIN_TOKEN"], running[0].url)
        welcome = _welcome(hub, env["BLACKWIDOW_ADMIN_TOKEN"], token, first_crawler)
        print(*welcome, sep="\n", flush=True)
        started = time.monotonic()
        stop_at = None if duration is None else started + duration
        victim: processes.Running | None = running[-1]
        while stop_at is None or time.monotonic() < stop_at:
            time.sleep(SUMMARY_INTERVAL)
            if victim and (time.monotonic() - started >= kill_node_after or _enter_pressed()):
                victim.kill()
                print(
                    f"killed {victim.name} (kill -9): its crawlers move to the other node once",
                    "the hub declares it dead; see",
                    f"{hub}/crawlers",
                    flush=True,
                )
                victim = None
            print(time.strftime("%H:%M:%S"), *_summary(hub, token), sep="\n", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        for process in reversed(running):
            process.stop()
    return 0
