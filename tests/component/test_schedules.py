"""Crawler schedules on a real hub app and database: checked on every way in, with the field
named and nothing half-written; kept out of the source key; and a windowed crawler waits as
`scheduled` until the monitor's window timers wake it (its wall clock passed in)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from blackwidow.core.errors import ApiError
from blackwidow.core.node_protocol import Cursor
from blackwidow.models import Crawler, Node
from blackwidow.monitor.memory.shard import ShardMemory
from blackwidow.monitor.poller import NodeReport
from sources.credentials import CredentialBook
from spawn.api.subscribers import parse_spec
from tests.component.conftest import bearer, make_reconciler

NAMES = itertools.count(1)  # crawler names, unique per user as the hub wants

FEED = "https://example.com/feed.xml"
WINDOW = {"cron": "0 9 * * *", "for": 3600}  # 09:00 to 10:00 UTC


def rss(schedule: Any = None, **extra: Any) -> dict[str, Any]:
    body = {"name": f"news {next(NAMES)}", "source": "rss", "query": {"feeds": [FEED]}, **extra}
    return body if schedule is None else {**body, "schedule": schedule}


BAD = [
    ({"cron": "61 * * * *"}, "schedule.cron"),
    ({"cron": "* * *"}, "schedule.cron"),
    ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "schedule.timezone"),
    ({"every": 0}, "schedule.every"),
    ({"every": "often"}, "schedule.every"),
    ({"cron": "0 9 * * *", "for": -1}, "schedule.for"),
    ({"cron": "0 9 * * *", "until": "17:00"}, "schedule.until"),
    ({"every": 60, "cron": "* * * * *"}, "schedule"),
    ("hourly", "schedule"),
]


@pytest.mark.parametrize(("schedule", "field"), BAD)
def test_a_bad_schedule_is_refused_naming_its_field(client, make_user, schedule, field) -> None:
    token = make_user()["token"]
    created = client.post("/api/v1/crawlers", json=rss(schedule), headers=bearer(token))
    assert created.status_code == 422
    assert created.json["error"]["field"] == field
    assert created.json["error"]["message"].startswith(f"{field}: ")
    assert client.get("/api/v1/crawlers", headers=bearer(token)).json == []


def test_a_bad_schedule_in_a_batch_names_its_entry_and_creates_nothing(client, make_user) -> None:
    token = make_user()["token"]
    body = {"crawlers": [rss({"every": 60}), rss({"cron": "0 25 * * *"})]}
    created = client.post("/api/v1/crawlers/batch", json=body, headers=bearer(token))
    assert created.status_code == 422
    assert created.json["error"]["field"] == "crawlers.1.schedule.cron"
    assert client.get("/api/v1/crawlers", headers=bearer(token)).json == []


def test_a_bad_schedule_in_a_patch_changes_nothing(client, make_user) -> None:
    token = make_user()["token"]
    crawler = client.post("/api/v1/crawlers", json=rss({"every": 60}), headers=bearer(token)).json
    url = f"/api/v1/crawlers/{crawler['id']}"
    edit = {"name": "renamed", "schedule": {"cron": "0 9 * * *", "timezone": "Nowhere/Land"}}
    patched = client.patch(url, json=edit, headers=bearer(token))
    assert patched.status_code == 422
    assert patched.json["error"]["field"] == "schedule.timezone"
    assert client.get(url, headers=bearer(token)).json == crawler


def test_schedules_are_shown_changed_and_removed(client, make_user) -> None:
    token = make_user()["token"]
    paris = {"cron": "*/15  * * * *", "timezone": "Europe/Paris"}
    crawler = client.post("/api/v1/crawlers", json=rss(paris), headers=bearer(token)).json
    assert crawler["schedule"] == {"cron": "*/15 * * * *", "timezone": "Europe/Paris"}
    assert crawler["next_start"] is None
    url = f"/api/v1/crawlers/{crawler['id']}"
    patched = client.patch(url, json={"schedule": WINDOW}, headers=bearer(token))
    assert patched.status_code == 200 and patched.json["schedule"] == WINDOW
    cleared = client.patch(url, json={"schedule": None}, headers=bearer(token))
    assert cleared.json["schedule"] is None
    plain = client.post("/api/v1/crawlers", json=rss(), headers=bearer(token)).json
    assert plain["schedule"] is None


def test_schedules_do_not_split_a_shared_source(client, make_user) -> None:
    token = make_user()["token"]
    keys = {
        client.post("/api/v1/crawlers", json=rss(schedule), headers=bearer(token)).json["uuid"]
        for schedule in (None, {"every": 30}, {"cron": "0 * * * *"}, WINDOW)
    }
    assert len(keys) == 1


def test_a_node_refuses_a_pushed_schedule_it_cannot_use() -> None:
    body = {"crawler_id": 1, "user_id": 1, "source": "rss", "query": {"feeds": [FEED]}}
    assert parse_spec(1, {**body, "schedule": {"every": 5}}, CredentialBook()).schedule == {
        "every": 5
    }
    with pytest.raises(ApiError) as refused:
        parse_spec(1, {**body, "schedule": {"cron": "nope"}}, CredentialBook())
    assert (refused.value.status, refused.value.field) == (422, "schedule.cron")


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_a_windowed_crawler_waits_scheduled_until_its_window_opens(
    client: FlaskClient, make_user, sessions: sessionmaker[Session]
) -> None:
    token = make_user()["token"]
    crawler_id = client.post("/api/v1/crawlers", json=rss(WINDOW), headers=bearer(token)).json["id"]
    with sessions.begin() as session:
        node = Node(url="http://127.0.0.1:9")
        session.add(node)
        session.flush()
        node_id = node.id
    memory = ShardMemory()
    memory.live = (node_id,)
    memory.reported.apply(node_id, NodeReport(Cursor("stream", 1), True, [], []))
    now = [at("2026-01-05T08:00:00")]
    reconciler = make_reconciler(sessions, memory, wall=lambda: now[0])

    reconciler.reconcile_once({})  # no node is addressed: nothing is pushed, states recorded
    with sessions() as session:
        assert session.get(Crawler, crawler_id).state == "scheduled"
    shown = client.get(f"/api/v1/crawlers/{crawler_id}", headers=bearer(token)).json
    assert shown["state"] == "scheduled"
    assert datetime.fromisoformat(shown["next_start"]).time().isoformat() == "09:00:00"

    now[0] = at("2026-01-05T08:59:59")
    assert reconciler.plan()[0].pushes == {}  # still closed, and not looked at again
    assert memory.windows.next_at() == at("2026-01-05T09:00:00")

    now[0] = at("2026-01-05T09:00:01")  # the timer pops: the crawler is routed and pushed
    pushed = reconciler.plan()[0].pushes[node_id]
    assert [(spec.crawler_id, spec.schedule) for spec in pushed] == [(crawler_id, WINDOW)]
    assert memory.windows.next_at() == at("2026-01-05T10:00:00")
