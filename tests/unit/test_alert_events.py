"""Alert events: the body's shape, and the budget thresholds each crossed once on the way up."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from blackwidow.alerts import events
from blackwidow.alerts.signing import signature


def test_a_body_holds_id_type_time_and_details() -> None:
    event = events.crawler_failed(7, 3, "refused")
    body = json.loads(event.body())
    assert body == {
        "id": event.id,
        "type": "crawler.failed",
        "at": event.at.isoformat(),
        "crawler_id": 7,
        "user_id": 3,
        "error": "refused",
    }
    assert event.body() == event.body()  # the same bytes every time it is sent
    assert event.user_id == 3 and events.node_dead(1, "u").user_id is None


@pytest.mark.parametrize(
    ("before", "after", "kinds"),
    [
        (0, 89, []),
        (0, 90, ["budget.warning"]),
        (89, 95, ["budget.warning"]),
        (90, 95, []),  # crossed already
        (95, 100, ["budget.exhausted"]),
        (50, 120, ["budget.warning", "budget.exhausted"]),
        (100, 130, []),
        (95, 90, []),  # going down never fires
    ],
)
def test_budget_thresholds_fire_when_crossed_upward(before, after, kinds) -> None:
    crossed = events.budget_crossings(5, 100, before, after)
    assert [e.type for e in crossed] == kinds
    assert all(e.user_id == 5 and e.details["items_stored"] == after for e in crossed)


def test_the_signature_is_githubs_scheme() -> None:
    body = b'{"id":"x"}'
    digest = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert signature("s3cret", body) == f"sha256={digest}"
