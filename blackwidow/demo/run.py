"""`blackwidow demo`: a hub, two nodes and a sample-feed server on loopback, offline.

It creates a user and four crawlers (two share a feed set, so one data source), prints the
two tokens, the dashboard's sign-in link and a `curl` call, then a one-line status per
crawler as items arrive. Part-way through (or when Enter is pressed on a terminal) it kills
the node the hub says runs the most crawlers, kill -9, naming it by the hub's node id, so the
dashboard shows the hub declaring it dead and moving its crawlers to the other node. Ctrl-C
(or SIGTERM, or a closed terminal) stops its processes and ends it with status 0: it is how
the demo ends, as for the servers and `items --follow`, and `make` reports any other status
as an error.
"""

from __future__ import annotations

import secrets
import select
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click

from blackwidow.client.config import HubConnection
from blackwidow.client.hub_client import HubClient
from blackwidow.demo import processes
from blackwidow.demo.status import Status

POLL_INTERVAL = "1"
SUMMARY_INTERVAL = 2.0
STARTUP_TIMEOUT = 30.0
FIRST_ITEMS_TIMEOUT = 15.0  # seconds the first status waits for every crawler's first items
KILL_NODE_AFTER = 40.0  # seconds of summaries before a node is killed; Enter kills it sooner
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A signal to stop arrived: raised wherever the demo is, as KeyboardInterrupt is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop_on_signals() -> None:
    """Every stop signal raises Stopped, once. Ctrl-C and SIGTERM always stop the demo (its
    processes would go on without it); a SIGHUP ignored from the start (nohup) stays so."""

    def stop(signum: int, frame: FrameType | None) -> None:
        _ignore_stop_signals()  # stopping is under way: a second Ctrl-C changes nothing
        raise Stopped(signum)

    for each in STOP_SIGNALS:
        if each != signal.SIGHUP or signal.getsignal(each) is not signal.SIG_IGN:
            signal.signal(each, stop)


def _ignore_stop_signals() -> None:
    for each in STOP_SIGNALS:
        signal.signal(each, signal.SIG_IGN)


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


def _start(env: dict[str, str], workdir: Path, running: list[processes.Running]) -> None:
    """The feed server beside the hub, then both nodes at once (they need the hub's URL):
    each step as long as its slowest process. Each in its own process group, so Ctrl-C
    reaches the demo alone, which stops them."""
    first = {"feeds": ("blackwidow.demo.feed_server", "--port", "0")}
    first["hub"] = ("blackwidow", "hub", "--port", "0")
    running += processes.start_together(first, env, workdir, STARTUP_TIMEOUT, own_group=True)
    node = ("blackwidow", "spawn", "--hub", running[1].url, "--port", "0")
    nodes = {"node1": node, "node2": node}
    running += processes.start_together(nodes, env, workdir, STARTUP_TIMEOUT, own_group=True)


def _wait_for_nodes(admin: HubClient, count: int) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while admin.json("GET", "/api/v1/nodes/count")["active"] < count:
        if time.monotonic() > deadline:
            raise click.ClickException("the nodes did not register in time")
        time.sleep(0.1)


def _setup(admin: HubClient, feeds: str) -> tuple[str, int]:
    """Create the demo user and crawlers; return the user's token and the first crawler."""
    user = admin.json("POST", "/api/v1/users", json={"name": "demo", "item_limit": 1000})
    made = HubClient(HubConnection(admin.url, user["token"])).json(
        "POST", "/api/v1/crawlers/batch", json={"crawlers": _crawlers(feeds)}
    )
    return user["token"], made["crawlers"][0]["id"]


def _welcome(hub: str, admin_token: str, user_token: str, crawler_id: int) -> list[str]:
    """How to look: the dashboard's sign-in link carries the admin token in its fragment,
    which browsers never send, and the page wipes it from the address bar (docs/dashboard.md:
    Signing in); the analysts' command tails a crawler (docs/cli.md)."""
    command = sys.argv[0] if Path(sys.argv[0]).name == "blackwidow" else "blackwidow"
    return [
        f"tokens     admin {admin_token}  the dashboard's: users, nodes, every crawler",
        f"           user  {user_token}  user demo's, in the api and cli lines",
        f"dashboard  {hub}/signin#token={admin_token}",
        "           (opens the sign-in form filled with the admin token; press Sign in)",
        f"api        curl -H 'Authorization: Bearer {user_token}' {hub}/api/v1/crawlers",
        f"cli        BLACKWIDOW_HUB_URL={hub} BLACKWIDOW_TOKEN={user_token}"
        f" {command} items {crawler_id} --follow",
    ]


def _kill_hint(interactive: bool, kill_node_after: float, duration: float | None) -> str | None:
    """What will kill a node: Enter is offered on a terminal only; the timer, if it fires."""
    timed = duration is None or kill_node_after < duration
    after = f"after {kill_node_after:g} s" if timed else None
    watch = "watch its crawlers move on the dashboard"
    if interactive:
        sooner = f", or it goes {after}" if after else ""
        return f"press Enter to kill a node (kill -9){sooner}; {watch}"
    return f"{after} one node is killed (kill -9); {watch}" if after else None


def _enter_pressed() -> bool:
    """A line typed on a terminal, without waiting; never when stdin is not one."""
    if not sys.stdin.isatty():
        return False
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(ready) and sys.stdin.readline() is not None


def busiest(listed: list[dict[str, Any]], urls: set[str]) -> dict[str, Any] | None:
    """Of the hub's nodes, the active one among `urls` that runs the most crawlers (a tie:
    the lowest id), so killing it moves something. Pure."""
    live = [node for node in listed if node["state"] == "active" and node["url"] in urls]
    return max(live, key=lambda node: (node["subscribers"], -node["id"]), default=None)


def _kill_busiest(admin: HubClient, nodes: list[processes.Running]) -> str:
    """Kill (kill -9) the node the hub says runs the most crawlers; what to print."""
    by_url = {node.url.rstrip("/"): node for node in nodes}
    listed = [{**n, "url": n["url"].rstrip("/")} for n in admin.every("/api/v1/nodes")]
    chosen = busiest(listed, set(by_url))
    if chosen is None:
        return "no active node of the demo's to kill"
    victim = by_url[chosen["url"]]
    victim.kill()
    return (
        f"killed node {chosen['id']} (pid {victim.process.pid}, kill -9; it ran"
        f" {chosen['subscribers']} crawlers): they move to the other node once the hub"
        " declares it dead"
    )


def _watch(
    admin: HubClient,
    status: Status,
    nodes: list[processes.Running],
    duration: float | None,
    kill_after: float,
) -> None:
    """A status every SUMMARY_INTERVAL; the busiest node killed after `kill_after` or on
    Enter."""
    started = time.monotonic()
    stop_at = None if duration is None else started + duration
    print(time.strftime("%H:%M:%S"), *status.lines(), sep="\n", flush=True)
    while stop_at is None or time.monotonic() < stop_at:
        time.sleep(SUMMARY_INTERVAL)
        if nodes and (time.monotonic() - started >= kill_after or _enter_pressed()):
            said = _kill_busiest(admin, nodes)
            print(f"{said}; see {admin.url}/crawlers", flush=True)
            nodes = []
        print(time.strftime("%H:%M:%S"), *status.lines(), sep="\n", flush=True)


def _demo(
    workdir: Path, running: list[processes.Running], duration: float | None, kill_after: float
) -> None:
    env = _environment(workdir)
    _start(env, workdir, running)
    feeds, hub = running[0].url, running[1].url
    print(f"hub {hub}  feeds {feeds}  logs {workdir}", flush=True)
    admin = HubClient(HubConnection(hub, env["BLACKWIDOW_ADMIN_TOKEN"]))
    _wait_for_nodes(admin, 2)
    token, first_crawler = _setup(admin, feeds)
    print(*_welcome(hub, admin.connection.token, token, first_crawler), sep="\n", flush=True)
    hint = _kill_hint(sys.stdin.isatty(), kill_after, duration)
    if hint:
        print(hint, flush=True)
    status = Status(HubClient(HubConnection(hub, token)))
    status.wait_for_items(FIRST_ITEMS_TIMEOUT)
    _watch(admin, status, running[2:], duration, kill_after)


def run_demo(duration: float | None, kill_node_after: float = KILL_NODE_AFTER) -> int:
    """The demo until `duration` has passed or a stop signal came; its exit status, 0."""
    workdir = Path(tempfile.mkdtemp(prefix="blackwidow-demo-"))
    running: list[processes.Running] = []
    stopped_by: int | None = None
    _stop_on_signals()
    try:
        _demo(workdir, running, duration, kill_node_after)
    except Stopped as stop:
        stopped_by = stop.signum
    except RuntimeError as error:  # a process that did not start
        raise click.ClickException(str(error)) from None
    finally:
        _ignore_stop_signals()
        processes.stop_all(running)
    if stopped_by is not None:
        name = signal.Signals(stopped_by).name
        print(f"stopped on {name}: hub, nodes and feed server ended; logs in {workdir}", flush=True)
    return 0
