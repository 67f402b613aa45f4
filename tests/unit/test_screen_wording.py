"""What the screens say: counts with separators, ages, rates naming their window, stale
states with their age, the cluster's items per minute from rate samples, every form error at
once with feeds by line, and CLI tables that keep id and state whole at 80 columns."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from blackwidow import wording
from blackwidow.client import output
from blackwidow.client.account_commands import NODE_COLUMNS, NODE_TABLE
from blackwidow.crawler_names import NAME_LENGTH, free_name
from blackwidow.dashboard.forms import FormErrors, crawler_create, crawler_edits
from blackwidow.dashboard.freshness import Freshness
from blackwidow.dashboard.throughput import minutes_of, per_minute
from blackwidow.demo.run import busiest
from blackwidow.monitor.rates import Sample

NOW = datetime(2026, 5, 1, 12, 30, 40, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "said"),
    [(1500000, "1,500,000"), (999, "999"), (0, "0"), (1234.6, "1,235"), (None, "\u2013")],
)
def test_counts_carry_thousands_separators(value, said) -> None:
    assert wording.thousands(value) == said


def test_rates_and_ages_are_worded_alike_everywhere() -> None:
    assert wording.per_minute(25000) == "1,500,000/min"
    assert wording.rate_over(0.15, 300) == "9.0/min over 5 min"
    assert wording.age(71) == "71 s ago" and wording.age(600) == "10 min ago"


def test_a_state_is_stale_past_a_few_cycles_of_its_own_shard() -> None:
    fresh, old = NOW - timedelta(seconds=3), NOW - timedelta(seconds=71)
    one = Freshness((old,), stale_after=10.0, now=NOW)
    assert one.of_nodes() == one.of_crawler("any-key") == one.oldest() == "as of 71 s ago"
    assert Freshness((fresh,), 10.0, NOW).of_nodes() is None
    two = Freshness((fresh, old), 10.0, NOW)  # shard 0 judges nodes: they are fresh
    assert two.of_nodes() is None and two.oldest() == "as of 71 s ago"
    ages = {two.of_crawler(key) for key in (f"key-{n}" for n in range(40))}
    assert ages == {None, "as of 71 s ago"}  # each crawler by its source key's shard
    assert Freshness((None,), 10.0, NOW).of_nodes() == "no monitor cycle yet"


def test_cluster_throughput_spreads_each_rise_over_when_it_was_heard() -> None:
    now = NOW.timestamp()
    minute = now - now % 60  # 12:30:00
    steady = (Sample(100, minute - 120, minute - 120), Sample(220, minute, minute - 120))
    burst = (Sample(0, minute - 200, minute - 200), Sample(30, minute + 30, minute + 20))
    idle = (Sample(500, minute - 400, minute - 400),)  # nothing since: nothing counted
    assert per_minute([steady, burst, idle, ()], now, 3) == [60, 60, 30]
    assert minutes_of(300) == 5 and minutes_of(30) == 1


def test_a_taken_name_takes_the_first_free_number_and_still_fits() -> None:
    assert free_name("news", set()) == "news"
    assert free_name("news", {"news", "news (2)"}) == "news (3)"
    long = "x" * NAME_LENGTH
    renamed = free_name(long, {long})
    assert len(renamed) == NAME_LENGTH and renamed.endswith(" (2)")


def test_a_form_is_refused_with_every_error_at_once_and_feeds_by_line() -> None:
    form = {
        "name": "",
        "feeds": "https://ok.example/feed\nftp://x/y\n\nnot a url",
        "keywords": "",
        "item_limit": "many",
    }
    with pytest.raises(FormErrors) as refused:
        crawler_create(form)
    errors = refused.value.by_field
    assert set(errors) == {"name", "feeds", "item_limit"}
    assert [m.split(":")[0] for m in errors["feeds"]] == [
        "line 2 (ftp",
        "line 4 (not)",
        "line 4 (a)",
        "line 4 (url)",
    ]
    assert errors["item_limit"] == ["item_limit: Not a valid integer."]
    assert "item_limit: Not a valid integer." in refused.value.message


def test_an_edit_form_says_its_error_naming_the_field() -> None:
    with pytest.raises(FormErrors, match=r"^item_limit: "):
        crawler_edits({"item_limit": "-3"})
    assert crawler_edits({"item_limit": "", "enabled": "false"}) == {
        "item_limit": None,
        "enabled": False,
    }


def test_nodes_ls_keeps_id_and_state_whole_at_80_columns(monkeypatch) -> None:
    printed = io.StringIO()
    monkeypatch.setattr(output, "Console", lambda **kw: Console(file=printed, width=80, **kw))
    nodes = [
        {
            "id": 12,
            "url": "http://10.0.0.55:8100/a/long/path/that/goes/on/and/on",
            "state": "suspect",
            "subscribers": 1500000,
            "data_sources": 3,
            "last_polled_at": (datetime.now(UTC) - timedelta(seconds=4)).isoformat(),
            "phi": 0.123456,
        }
    ]
    output.rows(nodes, NODE_COLUMNS, "table", NODE_TABLE)
    header, row = printed.getvalue().splitlines()
    assert header.split()[:3] == ["id", "url", "state"]
    assert row.split()[0] == "12" and "suspect" in row.split() and "1,500,000" in row
    assert "…" in row and len(row) <= 80 and "0.12" in row


def test_the_demo_kills_the_node_that_runs_the_most_crawlers() -> None:
    listed = [
        {"id": 1, "url": "http://a", "state": "active", "subscribers": 1},
        {"id": 2, "url": "http://b", "state": "active", "subscribers": 3},
        {"id": 3, "url": "http://c", "state": "dead", "subscribers": 9},
        {"id": 4, "url": "http://other", "state": "active", "subscribers": 7},
    ]
    assert busiest(listed, {"http://a", "http://b", "http://c"})["id"] == 2
    assert busiest(listed, {"http://c"}) is None
