"""Stream reconnects: linear after network trouble, doubling after HTTP errors and rate limits,
every few seconds while X still counts a lost connection (TooManyConnections)."""

from __future__ import annotations

import pytest

from sources.reconnect import (
    RELEASE_RETRY,
    RELEASE_WINDOW,
    ReconnectPolicy,
    describe_http_error,
)

RATE_LIMIT_WAIT = 60.0


@pytest.fixture
def policy() -> ReconnectPolicy:
    return ReconnectPolicy(rate_limit_wait=RATE_LIMIT_WAIT)


def test_network_errors_reconnect_at_once_then_back_off_by_a_quarter_second(policy):
    waits = [policy.after_network_error() for _ in range(6)]
    assert waits == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]


def test_network_waits_are_capped_at_16_seconds(policy):
    waits = [policy.after_network_error() for _ in range(100)]
    assert waits[64] == 16.0  # 64 steps of 0.25
    assert waits[63] == 15.75
    assert max(waits) == 16.0
    assert waits[-1] == 16.0


@pytest.mark.parametrize("status", [500, 503, 401, 403, 404])
def test_http_errors_start_at_5_seconds_and_double_up_to_320(policy, status):
    waits = [policy.after_http_error(status) for _ in range(10)]
    assert waits == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 320.0, 320.0, 320.0]


@pytest.mark.parametrize("status", [429, 420])
def test_a_rate_limit_waits_as_long_as_retry_after_says(policy, status):
    assert policy.after_http_error(status, retry_after=37.0) == 37.0
    assert policy.after_http_error(status, retry_after=0.0) == 0.0


@pytest.mark.parametrize("status", [429, 420])
def test_a_rate_limit_without_retry_after_doubles_from_the_configured_wait(policy, status):
    waits = [policy.after_http_error(status) for _ in range(7)]
    assert waits == [60.0, 120.0, 240.0, 480.0, 960.0, 960.0, 960.0]  # capped at 16 times


def test_the_rate_limit_cap_follows_the_configured_wait():
    policy = ReconnectPolicy(rate_limit_wait=2.0)
    assert [policy.after_http_error(429) for _ in range(7)] == [2, 4, 8, 16, 32, 32, 32]


def test_a_negative_retry_after_is_ignored(policy):
    assert policy.after_http_error(429, retry_after=-5.0) == RATE_LIMIT_WAIT


def test_retry_after_applies_only_to_rate_limits(policy):
    assert policy.after_http_error(503, retry_after=1.0) == 5.0


def test_each_kind_of_failure_counts_apart(policy):
    policy.after_http_error(500)
    policy.after_http_error(500)
    policy.after_http_error(429)

    assert policy.after_network_error() == 0.0
    assert policy.after_http_error(500) == 20.0
    assert policy.after_http_error(429) == 2 * RATE_LIMIT_WAIT


def test_connected_resets_every_backoff(policy):
    for _ in range(5):
        policy.after_network_error()
        policy.after_http_error(500)
        policy.after_http_error(429)

    policy.connected()

    assert policy.after_network_error() == 0.0
    assert policy.after_http_error(500) == 5.0
    assert policy.after_http_error(429) == RATE_LIMIT_WAIT


@pytest.mark.parametrize(
    ("status", "wait", "expected"),
    [
        (429, 60.0, "rate limited by X (HTTP 429); retrying in 60s"),
        (420, 7.5, "rate limited by X (HTTP 420); retrying in 7.5s"),
        (401, 5.0, "X refused the credential (HTTP 401); retrying in 5s"),
        (403, 320.0, "X refused the credential (HTTP 403); retrying in 320s"),
        (503, 10.0, "X answered HTTP 503; retrying in 10s"),
        (404, 0.25, "X answered HTTP 404; retrying in 0.25s"),
    ],
)
def test_describe_http_error(status, wait, expected):
    assert describe_http_error("X", status, wait) == expected


def test_describe_http_error_names_the_provider():
    assert describe_http_error("the provider", 401, 5.0).startswith("the provider refused")


# --- TooManyConnections: the app's one connection still counted -------------------------------


def test_too_many_connections_retries_every_few_seconds_within_xs_keepalive_window(policy):
    waits = [policy.after_too_many_connections(now, jitter=0.0) for now in (0.0, 2.0, 4.0, 19.9)]
    assert waits == [RELEASE_RETRY] * 4


def test_too_many_connections_waits_are_jittered_by_up_to_a_second(policy):
    assert policy.after_too_many_connections(0.0, jitter=0.5) == RELEASE_RETRY + 0.5
    assert policy.after_too_many_connections(1.0, jitter=0.999) == RELEASE_RETRY + 1.0


def test_too_many_connections_past_the_window_waits_like_a_rate_limit(policy):
    policy.after_too_many_connections(100.0, jitter=0.0)
    waits = [policy.after_too_many_connections(now, 0.0) for now in (120.0, 180.0, 300.0)]
    assert waits == [RATE_LIMIT_WAIT, 2 * RATE_LIMIT_WAIT, 4 * RATE_LIMIT_WAIT]


def test_a_rate_limit_never_gets_the_short_schedule(policy):
    assert policy.after_http_error(429) == RATE_LIMIT_WAIT > RELEASE_WINDOW


def test_the_window_counts_from_the_first_refusal_since_the_last_connection(policy):
    policy.after_too_many_connections(0.0, jitter=0.0)
    assert policy.after_too_many_connections(RELEASE_WINDOW, 0.0) == RATE_LIMIT_WAIT

    policy.connected()

    assert policy.after_too_many_connections(RELEASE_WINDOW + 1.0, 0.0) == RELEASE_RETRY
    assert policy.after_http_error(429) == RATE_LIMIT_WAIT  # the rate-limit count started afresh
