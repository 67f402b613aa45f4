"""The rate as the API, the dashboard and the CLI show it, read from the samples the monitor
writes (blackwidow.monitor.rates): the same number, naming its window, falling to zero a
window after the last item without a write."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.client.output import rate_over
from blackwidow.models import Crawler
from blackwidow.monitor import rates
from tests.component.conftest import bearer
from tests.component.test_dashboard import sign_in

WINDOW = 300.0  # the settings' default


def heard_every_poll(crawler_id: int, sessions: sessionmaker[Session], ended_ago: float) -> None:
    """What the monitor writes of a crawler that stored 2 items a second for two windows,
    up to `ended_ago` seconds ago: a sample each 2 s poll."""
    ended_at = time.time() - ended_ago
    samples: tuple[rates.Sample, ...] = ()
    for step in range(int(2 * WINDOW / 2) + 1):
        at = ended_at - 2 * WINDOW + 2 * step
        samples = rates.sampled(samples, 4 * step, at, WINDOW)
    with sessions.begin() as session:
        written = {"rate_samples": rates.stored(samples), "items_collected": 4 * step}
        session.execute(update(Crawler).where(Crawler.id == crawler_id).values(**written))


def shown_on_pages(client: FlaskClient, crawler_id: int) -> tuple[str, str]:
    listed = client.get("/crawlers").get_data(as_text=True)
    row = re.search(rf'data-crawler="{crawler_id}".*?data-rate>([^<]*)<', listed, re.DOTALL)
    page = client.get(f"/crawlers/{crawler_id}").get_data(as_text=True)
    one = re.search(r'id="crawler-rate">([^<]*)<', page)
    assert row and one, (listed, page)
    return row.group(1), one.group(1)


def test_the_api_dashboard_and_cli_show_one_rate_over_its_window(
    client: FlaskClient,
    sessions: sessionmaker[Session],
    make_user: Callable[..., dict[str, Any]],
) -> None:
    ana = make_user("ana")
    body = {"name": "c", "source": "rss", "query": {"feeds": ["https://a.example/feed"]}}
    made = client.post("/api/v1/crawlers", json=body, headers=bearer(ana["token"])).json
    assert (made["rate"], made["rate_window_seconds"]) == (0.0, WINDOW)  # nothing heard yet
    sign_in(client, ana["token"])

    heard_every_poll(made["id"], sessions, ended_ago=0.0)
    api = client.get(f"/api/v1/crawlers/{made['id']}", headers=bearer(ana["token"])).json
    assert abs(api["rate"] - 2.0) < 0.02 and api["rate_window_seconds"] == WINDOW, api
    assert shown_on_pages(client, made["id"]) == ("120/min over 5 min",) * 2
    assert rate_over(api) == "120/min over 5 min"  # `blackwidow crawlers show`

    heard_every_poll(made["id"], sessions, ended_ago=WINDOW / 2)  # stopped half a window ago
    api = client.get(f"/api/v1/crawlers/{made['id']}", headers=bearer(ana["token"])).json
    assert abs(api["rate"] - 1.0) < 0.02, api
    assert shown_on_pages(client, made["id"])[0] == rate_over(api) == "60/min over 5 min"

    heard_every_poll(made["id"], sessions, ended_ago=WINDOW)  # a window since the last item
    listed = client.get("/api/v1/crawlers", headers=bearer(ana["token"])).json
    assert (listed[0]["rate"], listed[0]["rate_window_seconds"]) == (0.0, WINDOW)
    assert shown_on_pages(client, made["id"]) == ("0/min over 5 min",) * 2
