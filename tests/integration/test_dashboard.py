"""The dashboard in a real browser (Debian's chromium, driven by Playwright) on a real
cluster: hub, two nodes and the sample-feed server. Each page's screenshot is kept under
test-artifacts/dashboard/ (ignored by git) for a person to look at.

One cluster and two browser contexts (the admin's and a user's) serve every check: a browser
session costs seconds, so a new check joins the walk rather than starting its own."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from blackwidow.dashboard.freshness import STALE_CYCLES
from tests.integration.conftest import Cluster
from tests.support import wait_until

CHROMIUM = Path("/usr/bin/chromium")
# Debian's browser, quiet: nothing is downloaded, nothing phones home
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
WAIT_MS = 15_000
NARROW = {"width": 420, "height": 800}  # a phone's width: the header must still fit


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), "no /usr/bin/chromium: run tests/services/install"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        launched.close()


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def sign_in(browser: Browser, hub: str, token: str) -> Page:
    """Through the ready-made link the demo prints: the token travels in the fragment."""
    page = browser.new_context(viewport={"width": 1360, "height": 900}).new_page()
    page.goto(f"{hub}/signin#token={token}")
    expect(page.locator("#token")).to_have_value(token)
    assert "#" not in page.url and token not in page.url  # wiped from the address bar
    page.click("#signin-button")
    expect(page.locator(".whoami")).to_be_visible()
    return page


def crawler_row(page: Page, crawler_id: int):  # type: ignore[no-untyped-def]
    return page.locator(f'tr[data-crawler="{crawler_id}"]')


@pytest.mark.slow
def test_the_dashboard_shows_and_steers_the_cluster(
    cluster: Callable[..., Cluster], browser: Browser
) -> None:
    c = cluster(2)
    ana = c.user("ana", item_limit=500)
    bob = c.user("bob")
    tech = c.feed("tech", items=6, every=1)
    shared = [c.crawler(ana, [tech], name=n) for n in ("tech", "tech-python")]
    science = c.crawler(ana, [c.feed("science", items=4)], name="science")
    secret = c.crawler(bob, [c.feed("bob-private", items=3)], name="bob-private")
    everything = [*shared, science]
    wait_until(
        lambda: all(c.get(ana, x["id"])["state"] == "running" for x in everything),
        what="ana's crawlers running",
    )
    wait_until(lambda: c.items(ana, science["id"]), what="items")

    admin = sign_in(browser, c.hub_url, c.admin_token)
    expect(admin.locator("#nodes tbody tr")).to_have_count(2)
    expect(admin.locator("#nodes")).to_contain_text("active")
    expect(admin.locator("#nodes [data-stale]")).to_have_count(0)  # the monitor cycles
    # the cluster's items stored per minute, from the rate samples, over the rate window
    expect(admin.locator("#throughput-chart rect")).to_have_count(5)
    expect(admin.locator("#throughput")).to_contain_text("rate samples")
    stored = re.compile(r"last 5 min:\s+[1-9][\d,]* items")
    expect(admin.locator("#throughput h2")).to_contain_text(stored, timeout=WAIT_MS)
    shot(admin, "cluster-admin")

    admin.click("nav >> text=Crawlers")
    for crawler in [*everything, secret]:
        expect(crawler_row(admin, crawler["id"])).to_be_visible()
    shot(admin, "crawlers-admin")

    # disable one crawler from the page; the state changes here and on the API
    row = crawler_row(admin, science["id"])
    row.locator('button[data-action="disable"]').click()
    expect(admin.locator(".flash.done")).to_contain_text("disabled")
    expect(crawler_row(admin, science["id"]).locator("[data-state]")).to_have_text("disabled")
    assert c.get(ana, science["id"])["state"] == "disabled"

    # edit a limit: a bad one is refused naming the field, a good one is kept (and written
    # with its thousands separated)
    row = crawler_row(admin, shared[0]["id"])
    row.locator('input[name="item_limit"]').fill("none")
    row.locator('button[data-action="limit"]').click()
    expect(admin.locator(".flash.error")).to_contain_text("item_limit: Not a valid integer.")
    assert c.get(ana, shared[0]["id"])["item_limit"] is None
    row = crawler_row(admin, shared[0]["id"])
    row.locator('input[name="item_limit"]').fill("1500000")
    row.locator('button[data-action="limit"]').click()
    expect(crawler_row(admin, shared[0]["id"]).locator("[data-limit]")).to_have_text("1,500,000")
    assert c.get(ana, shared[0]["id"])["item_limit"] == 1500000

    # a POST without the form's CSRF token, though it carries the session cookie: refused
    forged = admin.request.post(
        f"{c.hub_url}/crawlers/{shared[1]['id']}/edit",
        form={"enabled": "false"},
        max_redirects=0,
    )
    assert forged.status == 400
    assert c.get(ana, shared[1]["id"])["enabled"] is True

    # one crawler: its items, chart, data source and the crawler sharing it
    admin.goto(f"{c.hub_url}/crawlers/{shared[0]['id']}")
    expect(admin.locator("#sharing")).to_contain_text("tech-python")
    expect(admin.locator("svg.chart rect")).to_have_count(30)
    expect(admin.locator("#items tbody tr").first).to_be_visible(timeout=WAIT_MS)
    shot(admin, "crawler-admin")

    admin.click("nav >> text=Users")
    expect(admin.locator(".user")).to_have_count(2)
    shot(admin, "users-admin")

    # the admin owns no crawler, so is offered no form to make one (the API's 403)
    admin.click("nav >> text=Crawlers")
    expect(admin.locator("#new-crawler-link")).to_have_count(0)
    icon = admin.goto(f"{c.hub_url}/favicon.ico")
    assert icon is not None and icon.status == 200

    # bob sees his own only, on the pages and by a direct URL
    user = sign_in(browser, c.hub_url, bob)
    user.click("nav >> text=Crawlers")
    expect(crawler_row(user, secret["id"])).to_be_visible()
    for crawler in everything:
        expect(crawler_row(user, crawler["id"])).to_have_count(0)
    shot(user, "crawlers-user")
    answer = user.goto(f"{c.hub_url}/crawlers/{science['id']}")
    assert answer is not None and answer.status == 404
    expect(user.locator(".error-message")).to_contain_text(f"no crawler {science['id']}")
    assert "science" not in user.content()
    shot(user, "crawler-of-another-user")
    user.goto(c.hub_url)
    expect(user.locator("#nodes")).to_have_count(0)  # the node list is the admin's
    shot(user, "cluster-user")

    # search: bob finds his own items by a word every feed's titles hold, never ana's
    wait_until(lambda: c.items(bob, secret["id"]), what="bob's items")
    user.click("nav >> text=Search")
    user.fill('input[name="q"]', "STORY")
    user.click('form[role="search"] button[type="submit"]')
    expect(user.locator("#found tbody tr").first).to_contain_text("Bob-Private story")
    found = user.locator("#found").inner_text()
    assert "Science" not in found and "Tech" not in found
    shot(user, "search-user")

    create_export_and_delete(user, c, bob)

    # a phone's width: the header wraps, and Sign out is whole and on screen
    user.set_viewport_size(NARROW)
    user.goto(c.hub_url)
    sign_out = user.get_by_role("button", name="Sign out")
    expect(sign_out).to_be_in_viewport(ratio=1.0)
    box = sign_out.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= NARROW["width"]
    assert user.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    shot(user, "cluster-user-narrow")
    sign_out.click()
    expect(user.locator("#signin-form")).to_be_visible()
    assert re.search(r"/signin$", user.url)

    # a dead node is a Recent alert though no webhook is set, marked as sent nowhere
    c.nodes[1].kill()
    wait_until(
        lambda: "dead" in {n["state"] for n in c.every("/api/v1/nodes", c.admin_token)},
        what="a node declared dead",
    )
    admin.goto(c.hub_url)
    dead = admin.locator('#alerts tr[data-event="node.dead"]')
    expect(dead).to_contain_text(c.nodes[1].url)
    expect(dead.locator('[data-delivery="none"]')).to_be_visible()
    shot(admin, "cluster-admin-node-dead")

    # the monitor dies with its hub (kill -9); a hub serving without one (gunicorn, the
    # Procfile's web) says degraded and why, and marks the states nobody updates with their age
    monitored = c.hub
    assert monitored is not None
    c.start_gunicorn_hub(1, "blackwidow.wsgi:hub_app(monitor=False)")
    monitored.kill()
    stale_after = STALE_CYCLES * float(c.env["BLACKWIDOW_POLL_INTERVAL"])

    def monitor_gone() -> bool:
        monitor = c.call("GET", "/api/v1/health").json()["monitor"]
        cycled = datetime.fromisoformat(monitor["last_cycle_at"])
        silent_for = (datetime.now(UTC) - cycled.replace(tzinfo=UTC)).total_seconds()
        return not monitor["leader"] and silent_for > stale_after + 0.5

    wait_until(monitor_gone, what="the monitor's lock to lapse and its cycle to go stale")
    admin.goto(c.hub_url)  # the session cookie goes along: cookies do not care for ports
    expect(admin.locator("#health-status")).to_have_text("degraded")
    expect(admin.locator("#health-reasons")).to_contain_text("monitor: no leader for shard 0/1")
    aged = re.compile(r"· as of \d+ s ago")
    expect(admin.locator("#nodes tr[data-node] [data-stale]")).to_have_text(aged)
    shot(admin, "cluster-admin-monitor-dead")
    admin.goto(f"{c.hub_url}/crawlers")
    expect(crawler_row(admin, shared[1]["id"]).locator("[data-stale]")).to_have_text(aged)
    expect(crawler_row(admin, science["id"]).locator("[data-stale]")).to_have_count(0)  # off
    shot(admin, "crawlers-admin-monitor-dead")


def create_export_and_delete(user: Page, c: Cluster, token: str) -> None:
    """A user's crawler made from the form (a refusal first), its items newest first, exported
    as a file, then deleted after the confirmation."""
    user.click("nav >> text=Crawlers")
    user.click("#new-crawler-link")
    user.fill("#name", "bob-private")  # his crawler's name: names are unique per user
    user.fill("#feeds", "not-a-feed\nftp://x.example/y")
    user.fill("#item_limit", "many")
    user.click('button[data-action="create"]')  # every error at once, a bad feed by its line
    expect(user.locator("#error-count")).to_have_text("4 errors: nothing was written")
    expect(user.locator("#name-error")).to_contain_text("is named 'bob-private' already")
    expect(user.locator("#feeds-error p")).to_have_text(
        ["line 1 (not-a-feed): Not a valid URL.", "line 2 (ftp://x.example/y): Not a valid URL."]
    )
    expect(user.locator("#item_limit-error")).to_have_text("item_limit: Not a valid integer.")
    for field in ("#name", "#feeds", "#item_limit"):
        expect(user.locator(field)).to_have_attribute("aria-invalid", "true")
    shot(user, "new-crawler-refused")
    user.fill("#name", "stories")
    user.fill("#feeds", c.feed("stories", items=12))  # one fetch: twelve items, one fetch time
    user.fill("#keywords", "story")
    user.fill("#item_limit", "50")
    user.click('button[data-action="create"]')
    expect(user.locator(".flash.done")).to_contain_text("(stories) created")
    crawler_id = int(user.url.rsplit("/", 1)[1])
    assert c.get(token, crawler_id)["query"]["keywords"] == ["story"]

    # items of one fetch, newest published first: story 10 is not between 2 and 1
    wait_until(lambda: len(c.items(token, crawler_id)) == 12, what="the twelve stories")
    user.reload()  # now, rather than at the page's next refresh
    newest = [re.compile(rf"story {n}:") for n in range(12, 0, -1)]
    expect(user.locator("#items tbody tr td:nth-child(2)")).to_have_text(newest)
    shot(user, "crawler-user")
    with user.expect_download() as started:
        user.click("#export-jsonl")
    exported = Path(started.value.path()).read_text().splitlines()
    assert started.value.suggested_filename == f"crawler-{crawler_id}.jsonl"
    stories = {json.loads(line)["title"].split(":")[0] for line in exported}
    assert len(exported) == 12 and stories == {f"Stories story {n}" for n in range(1, 13)}

    user.click("#delete-link")
    expect(user.locator("#delete-crawler")).to_be_visible()
    assert c.call("GET", f"/api/v1/crawlers/{crawler_id}", token).status_code == 200
    user.click('button[data-action="confirm-delete"]')
    expect(user.locator(".flash.done")).to_contain_text(f"Crawler {crawler_id} (stories) deleted.")
    expect(crawler_row(user, crawler_id)).to_have_count(0)
    assert c.call("GET", f"/api/v1/crawlers/{crawler_id}", token).status_code == 404
