"""A windowed crawler through REST on a real hub and node: it waits as `scheduled`, runs while
its window is open, and collects only then."""

from __future__ import annotations

from datetime import datetime

from tests.support import wait_until

PERIOD, OPEN_FOR = 20, 8  # a window opens at seconds 0, 20 and 40 of each minute, for 8 s
SLACK = 3  # seconds: a cycle to notice the close, and a poll already started then


def test_a_windowed_crawler_runs_only_inside_its_window(cluster):
    c = cluster(1)
    token = c.user()
    schedule = {"cron": f"* * * * * */{PERIOD}", "for": OPEN_FOR}
    crawler = c.crawler(token, [c.feed("ticker", items=1, every=1)], schedule=schedule)
    assert crawler["schedule"] == schedule

    def state(wanted: str) -> dict | None:
        got = c.get(token, crawler["id"])
        return got if got["state"] == wanted else None

    waiting = wait_until(lambda: state("scheduled"), what="the crawler scheduled")
    first_start = datetime.fromisoformat(waiting["next_start"])
    wait_until(lambda: state("running"), what="the window to open")
    again = wait_until(lambda: state("scheduled"), what="the window to close")
    assert datetime.fromisoformat(again["next_start"]) > first_start
    assert again["node_id"] is None
    node = c.nodes[0]  # the crawler was taken off it: nothing there collects for it now
    wait_until(lambda: not c.node_health(node)["data_sources"], what="the data source stopped")

    items = c.items(token, crawler["id"])
    assert items, "nothing collected while the window was open"
    seconds = [datetime.fromisoformat(item["fetched_at"]).timestamp() for item in items]
    assert all(moment % PERIOD < OPEN_FOR + SLACK for moment in seconds), seconds
