"""`blackwidow demo` run as a newcomer runs it (a process, its output read line by line), and
its status lines against a real hub and node."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from blackwidow.client.config import HubConnection
from blackwidow.client.hub_client import HubClient
from blackwidow.demo.status import Status
from tests.integration.conftest import Cluster
from tests.support import wait_until

KILLED = re.compile(
    r"killed node (?P<node>\d+) \(pid \d+, kill -9; it ran (?P<crawlers>\d+) crawlers\)"
)
STATUS = re.compile(r"^  (\S+)\s+(\S+)\s+node=(\S+)\s+items=(\d+)\s+latest: (.*)$")


class Demo:
    """`blackwidow demo` with standard input not a terminal, in a process group of its own
    as a terminal's foreground job is; its output lines collected as they come."""

    def __init__(self, *args: str, sigint_ignored: bool = False) -> None:
        # a shell script's background job starts with SIGINT ignored, and so a child inherits it
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint_ignored else None
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "blackwidow", "demo", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        self.printed: queue.Queue[str] = queue.Queue()
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.printed.put(line.rstrip("\n"))

    def until(self, found: Any, what: str, timeout: float = 60) -> list[str]:
        """Every line printed so far, once `found(lines)` holds."""

        def printed() -> bool:
            while not self.printed.empty():
                self.lines.append(self.printed.get())
            return bool(found(self.lines))

        wait_until(printed, timeout=timeout, what=what)
        return self.lines

    def children(self) -> list[int]:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _status_blocks(lines: list[str]) -> list[list[re.Match[str]]]:
    """The status lines, a block per time stamp."""
    blocks: list[list[re.Match[str]]] = []
    for line in lines:
        if re.fullmatch(r"\d\d:\d\d:\d\d", line):
            blocks.append([])
        elif blocks and (found := STATUS.match(line)):
            blocks[-1].append(found)
    return blocks


def _consistent(status: re.Match[str]) -> bool:
    """A count of 0 beside no item, and a count beside an item."""
    return (status.group(4) == "0") == (status.group(5) == "-")


@pytest.mark.slow
def test_ctrl_c_stops_the_demo_and_its_processes_without_a_traceback():
    demo = Demo(sigint_ignored=True)
    try:
        lines = demo.until(lambda ls: len(_status_blocks(ls)) >= 2, "two status blocks")
        children = demo.children()
        assert len(children) == 4, children  # the feed server, the hub and two nodes
        os.killpg(demo.process.pid, signal.SIGINT)  # what Ctrl-C at a terminal sends
        assert demo.process.wait(timeout=30) == 0
        assert demo.process.stderr is not None
        assert demo.process.stderr.read() == ""  # no traceback, no log lines
        lines = demo.until(lambda ls: ls[-1].startswith("stopped on SIGINT"), "the last line")
        assert sum(line.startswith("stopped") for line in lines) == 1
        wait_until(lambda: not any(map(_alive, children)), what="the demo's processes gone")
    finally:
        demo.stop()

    out = "\n".join(lines)
    assert lines[0].startswith("hub http://127.0.0.1:")
    assert "press Enter" not in out, "an offer to read a line from a stdin that is no terminal"
    assert "after 40 s one node is killed (kill -9)" in out
    admin = re.search(r"^tokens     admin (\S+)  ", out, re.M)
    user = re.search(r"^           user  (\S+)  user demo's", out, re.M)
    assert admin and user, out
    assert f"/signin#token={admin.group(1)}\n" in out
    assert f"Bearer {user.group(1)}' " in out and f"BLACKWIDOW_TOKEN={user.group(1)} " in out
    first, *_ = blocks = _status_blocks(lines)
    assert [status.group(1) for status in first] == [
        *("tech", "tech-python", "science", "world-and-sports")
    ]
    assert all(_consistent(status) for block in blocks for status in block), out


def test_the_count_shown_is_never_below_the_newest_item_shown(cluster: Any) -> None:
    """The count is read with the item: not the count the hub had at its last poll (4 s apart
    here), which says 0 beside an item stored since."""
    c: Cluster = cluster(1, BLACKWIDOW_POLL_INTERVAL="4")
    token = c.user()
    crawler = c.crawler(token, [c.feed("counted", items=3)], name="counted")
    wait_until(lambda: c.items(token, crawler["id"]), what="the first items stored")
    [line] = Status(HubClient(HubConnection(c.hub_url, token))).lines()
    status = STATUS.match(line)
    assert status, line
    assert status.group(4) == "3" and status.group(5) == "Counted story 3: redis", line


@pytest.mark.slow
def test_demo_offers_the_dashboard_and_moves_the_crawlers_of_the_node_it_kills():
    demo = Demo("--duration", "20", "--kill-node-after", "3")
    try:
        assert demo.process.wait(timeout=90) == 0
        out = "\n".join(demo.until(lambda ls: ls and ls[-1].startswith("  world"), "the end"))
    finally:
        demo.stop()
    hub = out.splitlines()[0].split()[1]
    assert f"dashboard  {hub}/signin#token=" in out  # the token in the fragment, never sent
    assert "curl -H 'Authorization: Bearer " in out and f"{hub}/api/v1/crawlers" in out
    assert f"BLACKWIDOW_HUB_URL={hub} BLACKWIDOW_TOKEN=" in out and " --follow" in out
    killed = KILLED.search(out)  # the hub's node id, and one that ran crawlers
    assert killed and int(killed["crawlers"]) > 0, out
    after = out[killed.end() :]
    last = [line.split() for line in after.strip().splitlines()[-4:]]
    running = [words for words in last if words[1] == "running"]
    nodes = {words[2] for words in running}
    assert running and len(nodes) == 1 and "node=-" not in nodes, after  # all on the survivor
    assert nodes != {f"node={killed['node']}"}, after
