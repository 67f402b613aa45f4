"""The analysts' command line against a real hub and node: the `blackwidow` command run as a
process, as a newcomer runs it from the README."""

from __future__ import annotations

import csv
import json
import os
import queue
import signal
import stat
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster
from tests.support import wait_until


class Analyst:
    """Runs `blackwidow ...` with its own config directory and no hub in the environment."""

    def __init__(self, home: Path, **env: str) -> None:
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("BLACKWIDOW_")},
            "XDG_CONFIG_HOME": str(home),
            **env,
        }

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "blackwidow", *args]

    def run(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            input=stdin,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def ok(self, *args: str, stdin: str = "") -> str:
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def lines(self, *args: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.ok(*args, "--format", "jsonl").splitlines()]


class Tail:
    """`blackwidow items --follow` running; its output lines collected as they come."""

    def __init__(self, analyst: Analyst, *args: str) -> None:
        self.process = subprocess.Popen(
            analyst.command("items", *args, "--follow", "--format", "jsonl"),
            env=analyst.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.printed: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen: list[dict[str, Any]] = []

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.printed.put(json.loads(line))

    def at_least(self, count: int) -> list[dict[str, Any]]:
        def enough() -> bool:
            while not self.printed.empty():
                self.seen.append(self.printed.get())
            return len(self.seen) >= count

        wait_until(enough, timeout=30, what=f"{count} items printed by --follow")
        return self.seen

    def interrupt(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=10)


@pytest.fixture
def hub(cluster: Any) -> Cluster:
    return cluster(1)


def test_a_newcomer_logs_in_imports_opml_follows_items_and_exports_csv(
    hub: Cluster, tmp_path: Path
) -> None:
    token = hub.user("ana")
    analyst = Analyst(tmp_path / "config", BLACKWIDOW_HUB_URL=hub.hub_url)

    said = analyst.ok("login", stdin=f"{token}\n")
    login_file = tmp_path / "config" / "blackwidow" / "config.json"
    assert "user" in said and "ana" in said
    assert stat.S_IMODE(login_file.stat().st_mode) == 0o600
    assert token not in said
    del analyst.env["BLACKWIDOW_HUB_URL"]  # from now on the login file says where and who

    opml = tmp_path / "feeds.opml"
    opml.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0"><head><title>Mine'
        "</title></head><body>"
        f'<outline text="Tech"><outline type="rss" text="One" xmlUrl="{hub.feed("one", items=4)}"/>'
        f'<outline type="rss" text="Two" xmlUrl="{hub.feed("two", items=6)}"/></outline>'
        f'<outline type="rss" text="Static" xmlUrl="{hub.feed("static", items=30)}"/>'
        "</body></opml>"
    )
    made = analyst.lines("crawlers", "import", str(opml), "--group-by", "outline")
    assert sorted(c["name"] for c in made) == ["Mine", "Tech"]
    again = analyst.run("crawlers", "import", str(opml), "--format", "jsonl")
    assert again.returncode == 0 and again.stdout == ""
    assert again.stderr.count("skipped ") == 3 and "crawler " in again.stderr
    listed = analyst.lines("crawlers", "ls")
    assert {c["id"] for c in listed} == {c["id"] for c in made}
    exported_opml = analyst.ok("crawlers", "export-opml")
    assert hub.feed("one", items=4).replace("&", "&amp;") in exported_opml
    sports = analyst.lines(
        *("crawlers", "add", "--name", "sports-python", "--feed", hub.feed("sports", items=2)),
        *("--keyword", "python", "--item-limit", "500"),
    )[0]
    round_trip = tmp_path / "round-trip.opml"
    analyst.ok("crawlers", "export-opml", "-o", str(round_trip))
    back = analyst.run(
        *("crawlers", "import", str(round_trip), "--group-by", "outline", "--format", "jsonl")
    )
    assert (back.returncode, back.stdout) == (0, ""), back.stderr
    said = f"skipped crawler 'sports-python' (body.outline[2]): crawler {sports['id']} is the same"
    assert said in back.stderr
    assert len(analyst.lines("crawlers", "ls")) == 3
    analyst.ok("crawlers", "rm", str(sports["id"]), "--yes")

    static = next(c for c in made if c["name"] == "Mine")
    wait_until(
        lambda: analyst.lines("crawlers", "show", str(static["id"]))[0]["items_collected"] == 30,
        what="the static feed's 30 items stored",
    )
    static_url = hub.feed("static", items=30).replace("&", "&amp;")
    titled = f'text="Static (sample feed)" title="Static (sample feed)" xmlUrl="{static_url}"'
    assert titled in analyst.ok("crawlers", "export-opml")  # the feed's own title, read by its node
    out = tmp_path / "static.csv"
    analyst.ok("export", str(static["id"]), "-o", str(out))
    with out.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == len({row["id"] for row in rows}) == 30
    assert {row["crawler_id"] for row in rows} == {str(static["id"])}
    assert not list(tmp_path.glob(".static.csv*"))  # the partial file was renamed
    every = analyst.lines("items", str(static["id"]), "--limit", "100")
    assert sorted(i["id"] for i in every) == sorted(row["id"] for row in rows)
    cut = sorted(i["fetched_at"] for i in every)[15]
    later = analyst.lines("items", str(static["id"]), "--limit", "100", "--since", cut)
    earlier = analyst.lines("items", str(static["id"]), "--limit", "100", "--until", cut)
    assert all(i["fetched_at"] >= cut for i in later) and later
    assert sorted(i["id"] for i in later + earlier) == sorted(i["id"] for i in every)
    title = every[0]["title"]
    found = analyst.lines("search", title.upper(), "--crawler", "Mine")  # by name
    assert every[0]["id"] in {i["id"] for i in found}
    assert {i["crawler_id"] for i in found} == {static["id"]}
    assert all(set(title.lower().split()) <= set(i["title"].lower().split()) for i in found)
    assert analyst.lines("search", f"{title} unheardofword") == []
    nothing = analyst.run("search", "...")
    assert nothing.returncode == 1 and "q: needs a word" in nothing.stderr

    growing = analyst.lines(
        "crawlers", "add", "--name", "growing", "--feed", hub.feed("tail", items=3, every=0.5)
    )[0]
    before = wait_until(
        lambda: {i["id"] for i in analyst.lines("items", str(growing["id"]))} or None,
        what="the growing feed's first items",
    )
    assert len(before) >= 3
    tail = Tail(analyst, str(growing["id"]), "--limit", "2", "--interval", "0.3")
    printed = tail.at_least(8)
    assert tail.interrupt() == 0
    ids = [item["id"] for item in printed]
    assert len(ids) == len(set(ids)), "--follow printed an item twice"
    left_out = before - set(ids[:2])  # older than the two newest it started from
    assert not left_out & set(ids[2:]), "--follow printed an item from before it started"
    times = [item["fetched_at"] for item in printed]
    assert times == sorted(times), "--follow prints oldest first"
    stored = {item["id"] for item in hub.items(token, growing["id"])}
    assert set(ids) <= stored

    assert analyst.ok("crawlers", "disable", str(growing["id"])).strip().endswith("disabled")
    stopped = analyst.lines("crawlers", "ls", "--state", "disabled")
    assert [c["id"] for c in stopped] == [growing["id"]]
    edited = analyst.lines("crawlers", "edit", str(growing["id"]), "--name", "renamed")[0]
    assert (edited["name"], edited["enabled"]) == ("renamed", False)
    timed = analyst.lines(
        *("crawlers", "edit", str(growing["id"]), "--schedule", '{"every": 300}'),
        *("--recollect-after", "7200"),
    )[0]
    assert (timed["schedule"], timed["recollect_after"]) == ({"every": 300}, 7200)
    untimed = analyst.lines("crawlers", "edit", str(growing["id"]), "--schedule", "null")[0]
    assert (untimed["schedule"], untimed["recollect_after"]) == (None, 7200)
    assert not analyst.ok("crawlers", "enable", str(growing["id"])).strip().endswith("disabled")
    assert analyst.lines("crawlers", "show", str(growing["id"]))[0]["enabled"] is True
    analyst.ok("crawlers", "rm", str(growing["id"]), "--yes")
    assert growing["id"] not in {c["id"] for c in analyst.lines("crawlers", "ls")}
    analyst.ok("logout")
    assert not login_file.exists()


def test_bad_input_exits_2_a_refusal_exits_1_and_admins_manage_users(
    hub: Cluster, tmp_path: Path
) -> None:
    nobody = Analyst(tmp_path / "empty")
    missing = nobody.run("crawlers", "ls")
    assert missing.returncode == 2 and "--hub" in missing.stderr
    login_file = tmp_path / "empty" / "blackwidow" / "config.json"
    refused_login = nobody.run("login", "--hub", hub.hub_url, "--token-stdin", stdin="wrong\n")
    assert refused_login.returncode == 1 and not login_file.exists()

    admin = Analyst(
        tmp_path / "admin", BLACKWIDOW_HUB_URL=hub.hub_url, BLACKWIDOW_TOKEN=hub.admin_token
    )
    created = admin.lines("users", "add", "bob", "--item-limit", "50")[0]
    assert created["token"] and created["item_limit"] == 50
    assert "bob" in {u["name"] for u in admin.lines("users", "ls")}
    assert [n["state"] for n in admin.lines("nodes", "ls")] == ["active"]

    bob = Analyst(
        tmp_path / "bob", BLACKWIDOW_HUB_URL=hub.hub_url, BLACKWIDOW_TOKEN=created["token"]
    )
    assert bob.lines("users", "show")[0]["id"] == created["id"]
    assert bob.lines("users", "usage")[0]["remaining"] == 50
    bob.ok("credentials", "set", "twitter", stdin=json.dumps({"bearer_token": "secret-value"}))
    listed = bob.lines("credentials", "ls")
    assert [(c["source"], c["name"]) for c in listed] == [("twitter", "default")]
    assert "secret-value" not in json.dumps(listed)
    bob.ok("credentials", "rm", "twitter")
    assert bob.lines("credentials", "ls") == []

    no_feed = bob.run("crawlers", "add", "--name", "x")
    assert no_feed.returncode == 2 and "--feed" in no_feed.stderr
    for bad_name in ("bell\x07", "   "):
        unfit = bob.run("crawlers", "add", "--name", bad_name, "--feed", hub.feed("x"))
        assert unfit.returncode == 2 and "--name" in unfit.stderr, unfit.stderr
    renamed = bob.run("crawlers", "edit", "1", "--name", "esc\x1b[1m")
    assert renamed.returncode == 2 and "control characters: U+001B at 3" in renamed.stderr
    no_such_name = bob.run("items", "abc")
    assert no_such_name.returncode == 2 and "'CRAWLER'" in no_such_name.stderr
    bad_since = bob.run("items", "1", "--since", "yesterday")
    assert bad_since.returncode == 2 and "--since" in bad_since.stderr
    not_json = bob.run("crawlers", "add", "--name", "x", "--feed", hub.feed("x"), "--schedule", "5")
    assert not_json.returncode == 2 and "--schedule" in not_json.stderr
    bad_cron = bob.run(
        *("crawlers", "add", "--name", "x", "--feed", hub.feed("x")),
        *("--schedule", '{"cron": "every day"}'),
    )
    assert bad_cron.returncode == 1 and "(field schedule.cron)" in bad_cron.stderr
    bad_url = bob.run("crawlers", "add", "--name", "x", "--feed", "ftp://example.org/feed")
    assert bad_url.returncode == 1 and "(field query.feeds.0)" in bad_url.stderr
    assert bad_url.stderr.startswith("error: query.feeds.0: ")
    foreign = bob.run("crawlers", "show", "999999")
    assert foreign.returncode == 1 and "no crawler 999999" in foreign.stderr
    wrong = Analyst(tmp_path / "x", BLACKWIDOW_HUB_URL=hub.hub_url, BLACKWIDOW_TOKEN="wrong")
    refused = wrong.run("crawlers", "ls")
    assert refused.returncode == 1 and "Authorization" in refused.stderr
    unreachable = Analyst(
        tmp_path / "y", BLACKWIDOW_HUB_URL="http://127.0.0.1:9", BLACKWIDOW_TOKEN="t"
    ).run("crawlers", "ls")
    assert unreachable.returncode == 1 and "cannot reach the hub" in unreachable.stderr
    assert (
        unreachable.stderr.endswith("Connection refused\n") and unreachable.stderr.count("\n") == 1
    )


def test_crawlers_go_by_name_too_and_their_table_fits_80_columns(
    hub: Cluster, tmp_path: Path
) -> None:
    token = hub.user("cara")
    cara = Analyst(tmp_path / "cara", BLACKWIDOW_HUB_URL=hub.hub_url, BLACKWIDOW_TOKEN=token)
    assert cara.ok("--version") == f"blackwidow {version('blackwidow')}\n"

    long_name = "Ars Technica: Science, Space and the Long-Read Features of the Week (all)"
    missing = (
        f"{hub.feeds.url}/archive/2026/november/science-and-space/long-read-features.xml"
        "?utm_source=newsletter&utm_medium=email&utm_campaign=weekly-digest"
    )
    made = {
        name: cara.lines("crawlers", "add", "--name", name, "--feed", feed)[0]["id"]
        for name, feed in (
            ("tech", hub.feed("tech", items=3)),
            ("tech-python", hub.feed("tech", items=3)),
            (long_name, missing),
        )
    }
    twins = [cara.lines("crawlers", "add", "--name", "twin", "--feed", hub.feed("twin"))[0]]
    again = cara.run("crawlers", "add", "--name", "twin", "--feed", hub.feed("twin2"))
    assert again.returncode == 1 and "is named 'twin' already" in again.stderr, again.stderr
    assert "(field name)" in again.stderr  # the hub's 409: a user's names are unique
    assert cara.lines("crawlers", "show", "tech")[0]["id"] == made["tech"]
    assert cara.lines("crawlers", "show", long_name)[0]["id"] == made[long_name]
    wait_until(lambda: len(cara.lines("items", "tech")) == 3, what="tech's items, by name")
    edited = cara.lines("crawlers", "edit", "tech-python", "--keyword", "python")[0]
    assert (edited["id"], edited["query"]["keywords"]) == (made["tech-python"], ["python"])
    cara.ok("export", "tech", "-o", str(tmp_path / "tech.jsonl"))
    assert len((tmp_path / "tech.jsonl").read_text().splitlines()) == 3

    unknown = cara.run("items", "Tech")  # names are exact: another case is another name
    assert unknown.returncode == 2, unknown.stderr
    assert "no crawler named 'Tech'" in unknown.stderr and "'tech'" in unknown.stderr
    other = Analyst(
        tmp_path / "dan", BLACKWIDOW_HUB_URL=hub.hub_url, BLACKWIDOW_TOKEN=hub.user("dan")
    )
    assert other.run("crawlers", "show", "tech").returncode == 2  # another user's crawler
    dans = other.lines("crawlers", "add", "--name", "twin", "--feed", hub.feed("twin"))[0]
    admin = Analyst(
        tmp_path / "admin", BLACKWIDOW_HUB_URL=hub.hub_url, BLACKWIDOW_TOKEN=hub.admin_token
    )
    ambiguous = admin.run("crawlers", "rm", "twin", "--yes")  # the admin sees both users'
    assert ambiguous.returncode == 2, ambiguous.stderr
    assert f"ids {twins[0]['id']}, {dans['id']}" in ambiguous.stderr

    wait_until(
        lambda: cara.lines("crawlers", "show", long_name)[0]["last_error"],
        what="the missing feed's error",
    )
    cara.env["COLUMNS"] = "80"  # what rich reads for the width when stdout is not a terminal
    table = cara.ok("crawlers", "ls", "--format", "table").splitlines()
    assert max(len(line) for line in table) <= 80, "\n".join(table)
    assert len(table) == 1 + len(made) + len(twins), "a crawler over two lines"
    for crawler in cara.lines("crawlers", "ls"):
        row = next(line.split() for line in table[1:] if line.split()[0] == str(crawler["id"]))
        assert crawler["state"] in row and str(crawler["items_collected"]) in row
    assert any("Ars Technica" in line and "…" in line for line in table)
    admin.env["COLUMNS"] = "80"
    nodes = admin.ok("nodes", "ls", "--format", "table").splitlines()
    assert max(len(line) for line in nodes) <= 80, "\n".join(nodes)
    for node in admin.lines("nodes", "ls"):  # id and state whole, never `ac…`
        row = next(line.split() for line in nodes[1:] if line.split()[0] == str(node["id"]))
        assert node["state"] in row, nodes
