"""Time segments: which segment an instant is in, the versions ids carry, and id expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sources.model import Item
from sources.segments import id_ttl, segment_start, version_of, version_text, versioned

WEEK = 7 * 86400
HOUR = 3600


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# (instant, length, segment start)
STARTS = [
    ("2026-11-25T14:37:56", HOUR, "2026-11-25T14:00:00"),
    ("2026-11-25T14:00:00", HOUR, "2026-11-25T14:00:00"),
    ("2026-11-25T13:59:59.999999", HOUR, "2026-11-25T13:00:00"),
    ("2026-11-25T14:37:56", 86400, "2026-11-25T00:00:00"),
    ("2026-11-25T14:37:56", WEEK, "2026-11-19T00:00:00"),  # epoch weeks start on Thursdays
    ("2026-11-26T00:00:00", WEEK, "2026-11-26T00:00:00"),
    ("1970-01-01T00:00:00", WEEK, "1970-01-01T00:00:00"),
]


@pytest.mark.parametrize(("instant", "length", "start"), STARTS)
def test_segment_start(instant: str, length: int, start: str) -> None:
    assert segment_start(at(instant), length) == at(start)


def item(fetched: str) -> Item:
    return Item("guid-1", "rss", None, "t", None, None, None, at(fetched), crawler_id=3)


# (fetched_at, now, version id, fetched_at stored)
VERSIONS = [
    (
        "2026-11-25T14:10:00",
        "2026-11-25T14:20:00",
        "guid-1@2026-11-25T14:00:00Z",
        "2026-11-25T14:10:00",
    ),
    (
        "2026-11-25T13:50:00",
        "2026-11-25T14:20:00",
        "guid-1@2026-11-25T14:00:00Z",
        "2026-11-25T14:20:00",
    ),
    (
        "2026-11-25T14:59:59",
        "2026-11-25T15:00:00",
        "guid-1@2026-11-25T15:00:00Z",
        "2026-11-25T15:00:00",
    ),
]


@pytest.mark.parametrize(("fetched", "now", "stored_id", "stored_at"), VERSIONS)
def test_versioned(fetched: str, now: str, stored_id: str, stored_at: str) -> None:
    version = versioned(item(fetched), HOUR, at(now))
    assert (version.id, version.fetched_at) == (stored_id, at(stored_at))
    assert version_of(version.id) == segment_start(at(now), HOUR)


def test_the_same_item_in_one_segment_is_one_version_and_in_the_next_another() -> None:
    first = versioned(item("2026-11-25T14:10:00"), HOUR, at("2026-11-25T14:11:00"))
    again = versioned(item("2026-11-25T14:10:00"), HOUR, at("2026-11-25T14:59:00"))
    later = versioned(item("2026-11-25T14:10:00"), HOUR, at("2026-11-25T15:01:00"))
    assert first.id == again.id != later.id


@pytest.mark.parametrize(
    ("stored_id", "version"),
    [
        ("guid-1", None),
        ("tag:a@b.example,2024:1", None),
        ("x@2026-11-25T14:00:00", None),
        ("x@y@2026-11-19T00:00:00Z", at("2026-11-19T00:00:00")),
    ],
)
def test_version_of(stored_id: str, version: datetime | None) -> None:
    assert version_of(stored_id) == version


def test_version_text_is_utc_to_the_second() -> None:
    moment = datetime(2026, 11, 25, 15, 0, 0, 123, tzinfo=UTC) + timedelta(0)
    assert version_text(moment) == "2026-11-25T15:00:00Z"


def test_id_rows_live_two_segments() -> None:
    assert (id_ttl(WEEK), id_ttl(None)) == (2 * WEEK, None)
