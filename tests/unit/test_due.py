"""When a feed is next due: server lifetimes, Retry-After, backoff, retry jitter; time passed in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sources.fetch.due import (
    MAX_LIFETIME,
    after_failure,
    after_success,
    backoff,
    lifetime,
    retry_after,
)
from sources.fetch.scheduler import jittered

NOW_AT = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
DATE = "Mon, 01 Jan 2024 12:00:00 GMT"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"Cache-Control": "max-age=600"}, 600.0),
        ({"Cache-Control": "public, max-age=120, must-revalidate"}, 120.0),
        ({"Cache-Control": 'max-age="90"'}, 90.0),
        ({"cache-control": "max-age=30"}, None),  # plain dicts: requests' headers ignore case
        ({"Cache-Control": "max-age=0"}, None),
        ({"Cache-Control": "no-cache, max-age=600"}, None),
        ({"Cache-Control": "no-store"}, None),
        ({"Cache-Control": "s-maxage=600"}, None),  # for shared caches, not for us
        ({"Cache-Control": "max-age=999999"}, MAX_LIFETIME),
        ({"Cache-Control": "max-age=60", "Expires": "Mon, 01 Jan 2024 15:00:00 GMT"}, 60.0),
        ({"Expires": "Mon, 01 Jan 2024 12:30:00 GMT"}, 1800.0),
        (
            {"Expires": "Mon, 01 Jan 2024 12:30:00 GMT", "Date": "Mon, 01 Jan 2024 12:20:00 GMT"},
            600.0,
        ),
        ({"Expires": "Mon, 01 Jan 2024 11:00:00 GMT"}, None),  # already stale
        ({"Expires": "0"}, None),
        ({"Expires": "-1"}, None),
        ({"Expires": "Fri, 01 Jan 2100 00:00:00 GMT"}, MAX_LIFETIME),
    ],
)
def test_lifetime_of_an_answer(headers, expected):
    assert lifetime(headers, NOW_AT) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("120", 120.0),
        (" 5 ", 5.0),
        ("0", None),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("Mon, 01 Jan 2024 12:10:00 GMT", 600.0),
        ("Mon, 01 Jan 2024 11:10:00 GMT", None),  # past
        ("86401", MAX_LIFETIME),
        ("Fri, 01 Jan 2100 00:00:00 GMT", MAX_LIFETIME),
    ],
)
def test_retry_after(value, expected):
    headers = {} if value is None else {"Retry-After": value}
    assert retry_after(headers, NOW_AT) == expected


@pytest.mark.parametrize(
    ("now", "lifetimes", "expected"),
    [
        (100.0, (), 160.0),
        (100.0, (None, None), 160.0),
        (100.0, (30.0,), 160.0),  # a short lifetime never polls faster than the interval
        (100.0, (7200.0, None), 7300.0),  # <ttl>
        (100.0, (None, 600.0), 700.0),  # max-age
        (100.0, (600.0, 1200.0), 1300.0),
        (0.0, (10 * MAX_LIFETIME,), MAX_LIFETIME),
    ],
)
def test_after_success(now, lifetimes, expected):
    assert after_success(now, 60.0, *lifetimes) == expected


@pytest.mark.parametrize(
    ("failures", "intervals"),
    [(1, 2), (2, 4), (3, 8), (4, 10), (5, 10), (100, 10)],
)
def test_backoff_doubles_up_to_ten_intervals(failures, intervals):
    assert backoff(60.0, failures) == 60.0 * intervals


@pytest.mark.parametrize(
    ("failures", "asked", "expected"),
    [
        (1, None, 1120.0),
        (1, 30.0, 1120.0),  # the backoff is longer than what the server asked
        (1, 3600.0, 4600.0),  # Retry-After longer than the backoff wins
        (4, 900.0, 1900.0),
        (4, 300.0, 1600.0),
    ],
)
def test_after_failure(failures, asked, expected):
    assert after_failure(1000.0, 60.0, failures, asked) == expected


@pytest.mark.parametrize(
    ("now", "due_at", "draw", "expected"),
    [
        (0.0, 100.0, 0.0, 100.0),  # never earlier: Retry-After holds
        (0.0, 100.0, 0.5, 110.0),
        (0.0, 100.0, 0.999, 119.98),
        (50.0, 100.0, 0.5, 105.0),  # a share of the wait, not of the instant
        (100.0, 90.0, 0.5, 90.0),  # already due: nothing to spread
    ],
)
def test_jitter_spreads_a_retry_later_by_up_to_a_fifth_of_its_wait(now, due_at, draw, expected):
    assert jittered(now, due_at, 0.2, draw) == pytest.approx(expected)
