"""Settings from the environment: defaults, each variable parsed, bad ones named, secrets hidden."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from blackwidow.core.settings import Settings, SettingsError, data_dir, for_servers, from_env

NETWORKS = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("127.0.0.1/32"))


def test_empty_environ_gives_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    settings = from_env({})
    assert settings == Settings()
    assert (settings.database_url, settings.store_url, settings.outbox_dir) == (
        f"sqlite:///{tmp_path}/blackwidow/hub.db",
        f"sqlite:///{tmp_path}/blackwidow/items.db",
        f"{tmp_path}/blackwidow/outbox",
    )
    assert (settings.admin_token, settings.cluster_secret, settings.redis_url) == (None,) * 3
    assert (settings.poll_interval, settings.phi_dead, settings.acceptable_pause) == (2.0, 8.0, 3.0)
    assert (settings.orphan_after, settings.detach_after, settings.feed_interval) == (
        30.0,
        60.0,
        60.0,
    )
    assert (settings.routing, settings.node_capacity) == ("modulo", 100)
    assert settings.queue_maxlen == 100_000
    assert settings.fetch_allow == frozenset()


def test_unrelated_variables_are_ignored():
    assert from_env({"HOME": "/root", "BLACKWIDOW_UNKNOWN": "x"}) == Settings()


def test_a_given_mapping_is_the_whole_environment(monkeypatch):
    monkeypatch.setenv("BLACKWIDOW_POLL_INTERVAL", "9")
    assert from_env({}) == Settings()
    assert from_env().poll_interval == 9.0  # os.environ, unless a mapping is given


def test_the_data_directory_follows_xdg_else_home_never_the_working_directory(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert data_dir() == tmp_path / "home" / ".local" / "share" / "blackwidow"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # the XDG rule: a relative one is ignored
    assert data_dir() == tmp_path / "home" / ".local" / "share" / "blackwidow"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert data_dir() == tmp_path / "data" / "blackwidow"
    settings = Settings()
    for path in (settings.database_url, settings.store_url, settings.outbox_dir):
        assert Path(path.removeprefix("sqlite:///")).is_relative_to(tmp_path / "data")


@pytest.mark.parametrize(
    ("name", "raw", "attribute", "expected"),
    [
        (
            "BLACKWIDOW_DATABASE_URL",
            "postgresql://db/hub",
            "database_url",
            "postgresql+psycopg://db/hub",
        ),
        ("BLACKWIDOW_STORE", "redis://cache/0", "store_url", "redis://cache/0"),
        ("BLACKWIDOW_ADMIN_TOKEN", "t0ken", "admin_token", "t0ken"),
        ("BLACKWIDOW_CLUSTER_SECRET", "s3cret", "cluster_secret", "s3cret"),
        ("BLACKWIDOW_POLL_INTERVAL", "0.5", "poll_interval", 0.5),
        ("BLACKWIDOW_POLL_INTERVAL", "3", "poll_interval", 3.0),
        ("BLACKWIDOW_PHI_SUSPECT", "2.5", "phi_suspect", 2.5),
        ("BLACKWIDOW_PHI_DEAD", "12", "phi_dead", 12.0),
        ("BLACKWIDOW_PHI_MIN_STD", "0.05", "phi_min_std", 0.05),
        ("BLACKWIDOW_ACCEPTABLE_PAUSE", "0", "acceptable_pause", 0.0),
        ("BLACKWIDOW_PHI_WINDOW", "1000", "phi_window", 1000),
        ("BLACKWIDOW_ORPHAN_AFTER", "15", "orphan_after", 15.0),
        ("BLACKWIDOW_DETACH_AFTER", "90", "detach_after", 90.0),
        ("BLACKWIDOW_DEAD_NODE_RETENTION", "3600", "dead_node_retention", 3600.0),
        ("BLACKWIDOW_ROUTING", "rendezvous", "routing", "rendezvous"),
        ("BLACKWIDOW_ROUTING", "modulo", "routing", "modulo"),
        ("BLACKWIDOW_ROUTING", "weighted", "routing", "weighted"),
        ("BLACKWIDOW_CAPACITY_HEADROOM", "0", "capacity_headroom", 0.0),
        ("BLACKWIDOW_CAPACITY_HEADROOM", "0.5", "capacity_headroom", 0.5),
        ("BLACKWIDOW_FEED_INTERVAL", "300", "feed_interval", 300.0),
        ("BLACKWIDOW_FETCH_DEADLINE", "2.5", "fetch_deadline", 2.5),
        ("BLACKWIDOW_DATABASE_BUSY_TIMEOUT", "0.25", "database_busy_timeout", 0.25),
        ("BLACKWIDOW_NODE_NETWORKS", "10.0.0.0/8, 127.0.0.1", "node_networks", NETWORKS),
        ("BLACKWIDOW_NODE_CAPACITY", "7", "node_capacity", 7),
        ("BLACKWIDOW_FETCHERS", "64", "fetchers", 64),
        ("BLACKWIDOW_OUTBOX_DIR", "/var/lib/blackwidow", "outbox_dir", "/var/lib/blackwidow"),
        ("BLACKWIDOW_HOST_CONCURRENCY", "8", "host_concurrency", 8),
        ("BLACKWIDOW_HOST_GAP", "0", "host_gap", 0.0),
        ("BLACKWIDOW_HOST_GAP", "1.5", "host_gap", 1.5),
        ("BLACKWIDOW_QUEUE_MAXLEN", "5000", "queue_maxlen", 5000),
        ("BLACKWIDOW_SEEN_SET", "0", "seen_set", False),
        ("BLACKWIDOW_SEEN_SET", "1", "seen_set", True),
        (
            "BLACKWIDOW_REDIS_URL",
            "redis://localhost:6379/1",
            "redis_url",
            "redis://localhost:6379/1",
        ),
        (
            "BLACKWIDOW_FETCH_ALLOW",
            "Feeds.Example, LOCALHOST,,127.0.0.1 , ",
            "fetch_allow",
            frozenset({"feeds.example", "localhost", "127.0.0.1"}),
        ),
        ("BLACKWIDOW_FETCH_ALLOW", "", "fetch_allow", frozenset()),
        ("BLACKWIDOW_METRICS_TOKEN", "scrape-me", "metrics_token", "scrape-me"),
        ("BLACKWIDOW_METRICS_NETWORKS", "10.0.0.0/8, 127.0.0.1", "metrics_networks", NETWORKS),
        (
            "PROMETHEUS_MULTIPROC_DIR",
            "/run/blackwidow-metrics",
            "metrics_dir",
            "/run/blackwidow-metrics",
        ),
        ("BLACKWIDOW_LOG_FORMAT", "json", "log_format", "json"),
    ],
)
def test_each_variable_is_parsed(name, raw, attribute, expected):
    settings = from_env({name: raw})
    assert getattr(settings, attribute) == expected
    # and only that field moved
    assert settings.replace(**{attribute: getattr(Settings(), attribute)}) == Settings()


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("BLACKWIDOW_POLL_INTERVAL", "fast"),
        ("BLACKWIDOW_POLL_INTERVAL", "2s"),
        ("BLACKWIDOW_POLL_INTERVAL", ""),
        ("BLACKWIDOW_POLL_INTERVAL", "0"),
        ("BLACKWIDOW_PHI_DEAD", "0"),
        ("BLACKWIDOW_PHI_DEAD", "nan"),
        ("BLACKWIDOW_PHI_SUSPECT", "9"),  # above the default dead threshold, 8
        ("BLACKWIDOW_PHI_MIN_STD", "0"),
        ("BLACKWIDOW_ACCEPTABLE_PAUSE", "-1"),
        ("BLACKWIDOW_ACCEPTABLE_PAUSE", "inf"),
        ("BLACKWIDOW_PHI_WINDOW", "1"),
        ("BLACKWIDOW_ORPHAN_AFTER", "0.0"),
        ("BLACKWIDOW_DETACH_AFTER", "nan"),
        ("BLACKWIDOW_FEED_INTERVAL", "-0.5"),
        ("BLACKWIDOW_FETCH_DEADLINE", "0"),
        ("BLACKWIDOW_DATABASE_BUSY_TIMEOUT", "0"),
        ("BLACKWIDOW_DATABASE_BUSY_TIMEOUT", "15ms"),
        ("BLACKWIDOW_NODE_NETWORKS", "10.0.0.0/33"),
        ("BLACKWIDOW_NODE_NETWORKS", "intranet"),
        ("BLACKWIDOW_ROUTING", "random"),
        ("BLACKWIDOW_ROUTING", "Modulo"),
        ("BLACKWIDOW_ROUTING", ""),
        ("BLACKWIDOW_CAPACITY_HEADROOM", "-0.1"),
        ("BLACKWIDOW_CAPACITY_HEADROOM", "11"),
        ("BLACKWIDOW_CAPACITY_HEADROOM", "25%"),
        ("BLACKWIDOW_NODE_CAPACITY", "0"),
        ("BLACKWIDOW_NODE_CAPACITY", "-3"),
        ("BLACKWIDOW_NODE_CAPACITY", "2.5"),
        ("BLACKWIDOW_NODE_CAPACITY", "many"),
        ("BLACKWIDOW_FETCHERS", "0"),
        ("BLACKWIDOW_FETCHERS", "257"),  # threads stay bounded
        ("BLACKWIDOW_HOST_CONCURRENCY", "0"),
        ("BLACKWIDOW_HOST_GAP", "-0.1"),
        ("BLACKWIDOW_HOST_GAP", "fast"),
        ("BLACKWIDOW_QUEUE_MAXLEN", "0"),
        ("BLACKWIDOW_QUEUE_MAXLEN", "-100"),
        ("BLACKWIDOW_QUEUE_MAXLEN", "1e5"),
        ("BLACKWIDOW_QUEUE_MAXLEN", "lots"),
        ("BLACKWIDOW_DATABASE_URL", ""),
        ("BLACKWIDOW_DATABASE_URL", "   "),
        ("BLACKWIDOW_STORE", ""),
        ("BLACKWIDOW_ADMIN_TOKEN", ""),
        ("BLACKWIDOW_METRICS_TOKEN", " "),
        ("BLACKWIDOW_METRICS_NETWORKS", "10.0.0.0/33"),
        ("BLACKWIDOW_METRICS_NETWORKS", "the office"),
        ("PROMETHEUS_MULTIPROC_DIR", ""),
        ("BLACKWIDOW_SEEN_SET", "off"),
        ("BLACKWIDOW_LOG_FORMAT", "logfmt"),
    ],
)
def test_bad_values_name_their_variable(name, raw):
    with pytest.raises(SettingsError) as caught:
        from_env({name: raw})
    assert caught.value.name == name
    assert list(caught.value.problems) == [name]  # that one, and only that one
    assert str(caught.value).startswith(f"{name}: ")
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("name", "raw", "problem"),
    [
        ("BLACKWIDOW_POLL_INTERVAL", "soon", "Not a valid number."),
        ("BLACKWIDOW_POLL_INTERVAL", "0", "Must be greater than 0."),
        ("BLACKWIDOW_HOST_GAP", "-0.5", "Must be greater than or equal to 0."),
        ("BLACKWIDOW_PHI_DEAD", "1000", "Must be greater than 0 and less than 1000."),
        (
            "BLACKWIDOW_PHI_DEAD",
            "nan",
            "Special numeric values (nan or infinity) are not permitted.",
        ),
        ("BLACKWIDOW_NODE_CAPACITY", "2.5", "Not a valid integer."),
        ("BLACKWIDOW_NODE_CAPACITY", "0", "Must be greater than or equal to 1."),
        (
            "BLACKWIDOW_FETCHERS",
            "257",
            "Must be greater than or equal to 1 and less than or equal to 256.",
        ),
        (
            "BLACKWIDOW_MONITOR_SHARDS",
            "1025",
            "Must be greater than or equal to 1 and less than or equal to 1024.",
        ),
        ("BLACKWIDOW_ROUTING", "random", "Must be one of: modulo, rendezvous, weighted."),
        ("BLACKWIDOW_SEEN_SET", "off", "expected 1 or 0, got 'off'"),
        ("BLACKWIDOW_DATABASE_URL", " ", "must not be empty"),
        (
            "BLACKWIDOW_NODE_NETWORKS",
            "intranet",
            "expected networks like 10.0.0.0/8, got 'intranet'",
        ),
        ("BLACKWIDOW_PHI_SUSPECT", "9", "must not exceed BLACKWIDOW_PHI_DEAD (8), got 9"),
    ],
)
def test_the_error_says_what_is_wrong_with_the_value(name, raw, problem):
    with pytest.raises(SettingsError) as caught:
        from_env({name: raw})
    assert str(caught.value).startswith(f"{name}: {problem}")


def test_every_bad_variable_is_named_in_one_error():
    with pytest.raises(SettingsError) as caught:
        from_env(
            {
                "BLACKWIDOW_POLL_INTERVAL": "soon",
                "BLACKWIDOW_ROUTING": "random",
                "BLACKWIDOW_FETCHERS": "257",
                "BLACKWIDOW_PHI_SUSPECT": "9",  # a rule across variables, named with the rest
                "BLACKWIDOW_WEBHOOK_URL": "ftp://hooks.example/x",
                "BLACKWIDOW_WEBHOOK_SECRET": "s3cret",  # fine: its partner's problem is the URL
                "BLACKWIDOW_ORPHAN_AFTER": "15",  # fine
            }
        )
    problems = caught.value.problems
    assert set(problems) == {
        "BLACKWIDOW_POLL_INTERVAL",
        "BLACKWIDOW_ROUTING",
        "BLACKWIDOW_FETCHERS",
        "BLACKWIDOW_PHI_SUSPECT",
        "BLACKWIDOW_WEBHOOK_URL",
    }
    assert problems["BLACKWIDOW_POLL_INTERVAL"] == "Not a valid number."
    assert "modulo" in problems["BLACKWIDOW_ROUTING"]
    assert caught.value.name in problems
    lines = str(caught.value).splitlines()  # one line per variable
    assert sorted(lines) == sorted(f"{name}: {problem}" for name, problem in problems.items())


def test_a_rule_between_variables_waits_for_both_to_read_well():
    with pytest.raises(SettingsError) as caught:
        from_env({"BLACKWIDOW_PHI_SUSPECT": "9", "BLACKWIDOW_PHI_DEAD": "dead"})
    assert list(caught.value.problems) == ["BLACKWIDOW_PHI_DEAD"]


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("BLACKWIDOW_WEBHOOK_URL", "ftp://token-do-not-log@hooks.example/x"),
        ("BLACKWIDOW_WEBHOOK_URL", "https://[token-do-not-log"),
        (
            "BLACKWIDOW_CREDENTIALS",
            '{"twitter": {"default": {"bearer_token": 1}}, "x": "do-not-log"}',
        ),
    ],
)
def test_errors_never_echo_a_value_that_may_be_secret(name, raw):
    with pytest.raises(SettingsError) as caught:
        from_env({name: raw})
    assert caught.value.name == name
    assert "do-not-log" not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("BLACKWIDOW_ADMIN_TOKEN", "admin-token-do-not-log"),
        ("BLACKWIDOW_CLUSTER_SECRET", "cluster-secret-do-not-log"),
        ("BLACKWIDOW_METRICS_TOKEN", "metrics-token-do-not-log"),
        ("BLACKWIDOW_REDIS_URL", "redis://:password-do-not-log@cache:6379/0"),
    ],
)
def test_secrets_stay_out_of_repr(name, secret):
    settings = from_env({name: secret, "BLACKWIDOW_DATABASE_URL": "sqlite:///visible.db"})
    text = repr(settings)
    assert "do-not-log" not in text
    assert "sqlite:///visible.db" in text  # repr still shows the rest


def test_webhook_settings_are_read_and_checked():
    settings = from_env(
        {
            "BLACKWIDOW_WEBHOOK_URL": "https://hooks.example/bw",
            "BLACKWIDOW_WEBHOOK_SECRET": "s3cret",
            "BLACKWIDOW_SOURCE_FAILING_AFTER": "120",
            "BLACKWIDOW_NODE_HOLDING_ITEMS": "50",
        }
    )
    assert (settings.webhook_url, settings.webhook_secret) == ("https://hooks.example/bw", "s3cret")
    assert (settings.source_failing_after, settings.node_holding_items) == (120.0, 50)
    assert "s3cret" not in repr(settings) and "hooks.example" not in repr(settings)


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"BLACKWIDOW_WEBHOOK_URL": "ftp://hooks.example/x"}, "BLACKWIDOW_WEBHOOK_URL"),
        ({"BLACKWIDOW_WEBHOOK_URL": "https:///no-host"}, "BLACKWIDOW_WEBHOOK_URL"),
        ({"BLACKWIDOW_WEBHOOK_URL": "https://hooks.example/x"}, "BLACKWIDOW_WEBHOOK_SECRET"),
        ({"BLACKWIDOW_WEBHOOK_SECRET": "s3cret"}, "BLACKWIDOW_WEBHOOK_SECRET"),
        ({"BLACKWIDOW_SOURCE_FAILING_AFTER": "0"}, "BLACKWIDOW_SOURCE_FAILING_AFTER"),
        ({"BLACKWIDOW_NODE_HOLDING_ITEMS": "-1"}, "BLACKWIDOW_NODE_HOLDING_ITEMS"),
    ],
)
def test_bad_webhook_settings_name_the_variable(environ, named):
    with pytest.raises(SettingsError) as raised:
        from_env(environ)
    assert raised.value.name == named


def test_the_session_key_is_set_or_derived_from_the_cluster_secret_never_fixed():
    from blackwidow.core.settings import session_key

    given = from_env({"BLACKWIDOW_SESSION_SECRET": "s3", "BLACKWIDOW_CLUSTER_SECRET": "c"})
    assert session_key(given) == b"s3"
    one = session_key(from_env({"BLACKWIDOW_CLUSTER_SECRET": "c"}))
    other = session_key(from_env({"BLACKWIDOW_CLUSTER_SECRET": "d"}))
    assert one and other and one != other and len(one) == 32
    assert session_key(from_env({})) is None
    assert from_env({"BLACKWIDOW_SESSION_COOKIE_SECURE": "1"}).session_cookie_secure is True
    with pytest.raises(SettingsError, match="BLACKWIDOW_SESSION_COOKIE_SECURE"):
        from_env({"BLACKWIDOW_SESSION_COOKIE_SECURE": "sometimes"})


def test_servers_need_the_cluster_secret_named_with_every_other_problem():
    with pytest.raises(SettingsError) as caught:
        for_servers({"BLACKWIDOW_ROUTING": "random"})
    assert list(caught.value.problems) == ["BLACKWIDOW_ROUTING", "BLACKWIDOW_CLUSTER_SECRET"]
    assert caught.value.problems["BLACKWIDOW_CLUSTER_SECRET"] == (
        "must be set (hub and nodes share it)"
    )
    with pytest.raises(SettingsError) as caught:
        for_servers({"BLACKWIDOW_CLUSTER_SECRET": " "})
    assert caught.value.problems == {"BLACKWIDOW_CLUSTER_SECRET": "must not be empty"}
    assert for_servers({"BLACKWIDOW_CLUSTER_SECRET": "s"}) == from_env(
        {"BLACKWIDOW_CLUSTER_SECRET": "s"}
    )
