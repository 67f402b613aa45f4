"""The start-up check says a misconfiguration out loud: a misspelt variable is warned of with
the name it was likely meant to be, and the hub's SQL URL is taken as platforms set it or
refused in one line, exit 2."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from blackwidow.core import startup
from blackwidow.core.database_urls import database_url
from blackwidow.core.settings import (
    OTHER_VARIABLES,
    Settings,
    SettingsError,
    from_env,
    unknown_variables,
    variables,
)

ROOT = Path(__file__).resolve().parents[2]
# a variable the code reads itself, outside Settings
READ_OUTSIDE = re.compile(r"""(?:environ\.get|getenv|environ\[|_ENV =)\(?\s*["'](BLACKWIDOW_\w+)""")


@pytest.mark.parametrize(
    ("raw", "taken"),
    [
        ("postgres://u:p@db:5432/hub", "postgresql+psycopg://u:p@db:5432/hub"),  # Heroku's
        ("postgresql://db/hub", "postgresql+psycopg://db/hub"),
        ("POSTGRESQL://db/hub", "postgresql+psycopg://db/hub"),
        ("postgresql+psycopg://db/hub", "postgresql+psycopg://db/hub"),
        ("sqlite:////var/lib/hub.db", "sqlite:////var/lib/hub.db"),
        ("sqlite://", "sqlite://"),
        (" sqlite:///hub.db ", "sqlite:///hub.db"),
    ],
)
def test_postgres_urls_are_taken_with_the_projects_driver(raw, taken):
    assert database_url(raw) == taken
    assert from_env({"BLACKWIDOW_DATABASE_URL": raw}).database_url == taken


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("mysql://u:secret@db/hub", "got a mysql:// URL"),
        ("postgresql+psycopg2://u:secret@db/hub", "got a postgresql+psycopg2:// URL"),
        ("hub.db", "got something else"),
        ("u:secret@db/hub", "got something else"),
        ("postgres://u:secret@db:port/hub", "the port is not a number"),
    ],
)
def test_an_unknown_scheme_is_refused_naming_the_variable_never_the_password(raw, problem):
    with pytest.raises(SettingsError) as caught:
        from_env({"BLACKWIDOW_DATABASE_URL": raw})
    assert caught.value.name == "BLACKWIDOW_DATABASE_URL"
    assert problem in caught.value.problems["BLACKWIDOW_DATABASE_URL"]
    assert "secret" not in str(caught.value)


def test_a_bad_database_url_stops_the_start_in_one_line_with_status_2(monkeypatch, capsys):
    monkeypatch.setenv("BLACKWIDOW_CLUSTER_SECRET", "s")
    monkeypatch.setenv("BLACKWIDOW_DATABASE_URL", "mysql://u:secret@db/hub")
    with pytest.raises(SystemExit) as stopped:
        startup.settings_or_exit()
    assert stopped.value.code == 2
    problems = capsys.readouterr().err.splitlines()[1:]  # after "cannot start; fix ..."
    assert problems == [
        "BLACKWIDOW_DATABASE_URL: expected sqlite:///PATH or "
        "postgresql://USER:PASSWORD@HOST/DATABASE, got a mysql:// URL"
    ]


def test_a_commands_option_is_checked_as_its_variable(monkeypatch, capsys):
    monkeypatch.setenv("BLACKWIDOW_CLUSTER_SECRET", "s")
    given = variables({"database_url": "postgres://db/hub", "store_url": None})
    assert given == {"BLACKWIDOW_DATABASE_URL": "postgres://db/hub"}
    assert from_env(given).database_url == "postgresql+psycopg://db/hub"
    with pytest.raises(SystemExit):  # `blackwidow hub --db oracle://db/hub`
        startup.settings_or_exit(overrides={"database_url": "oracle://db/hub"})
    assert "BLACKWIDOW_DATABASE_URL: expected" in capsys.readouterr().err


def test_unknown_variables_are_named_with_the_nearest_known_one():
    environ = {
        "HOME": "/root",
        "BLACKWIDOW_POLL_INTERVAL": "2",  # known
        "BLACKWIDOW_POLL_INTERVALL": "3",
        "BLACKWIDOW_CLUSTER_SECRETS": "x",
        "BLACKWIDOW_DATABASE": "postgres://db/hub",
        "BLACKWIDOW_HUB_URL": "http://hub",  # the analysts' commands read it
        "BLACKWIDOW_ZZZ": "1",
    }
    assert unknown_variables(environ) == {
        "BLACKWIDOW_CLUSTER_SECRETS": "BLACKWIDOW_CLUSTER_SECRET",
        "BLACKWIDOW_DATABASE": "BLACKWIDOW_DATABASE_URL",
        "BLACKWIDOW_POLL_INTERVALL": "BLACKWIDOW_POLL_INTERVAL",
        "BLACKWIDOW_ZZZ": None,
    }
    assert from_env(environ).poll_interval == 2.0  # ignored, as before: only warned of


def test_the_start_up_check_warns_of_each_unknown_variable_in_one_line(caplog):
    environ = {"BLACKWIDOW_DETACH_AFTR": "30", "BLACKWIDOW_QQQQ": "1", "BLACKWIDOW_TOKEN": "t"}
    with caplog.at_level(logging.WARNING, logger="blackwidow.core.startup"):
        startup.warn_of_unknown(environ)
    assert [record.getMessage() for record in caplog.records] == [
        "unknown variable ignored variable=BLACKWIDOW_DETACH_AFTR"
        " did_you_mean=BLACKWIDOW_DETACH_AFTER",
        "unknown variable ignored variable=BLACKWIDOW_QQQQ",
    ]


def test_every_variable_the_code_reads_outside_settings_counts_as_known():
    """A variable read with os.environ elsewhere must not be warned of as unknown."""
    declared = {field.metadata["variable"] for field in Settings.__dataclass_fields__.values()}
    read = {
        name
        for folder in ("blackwidow", "spawn", "sources", "tests", "bench")
        for module in (ROOT / folder).rglob("*.py")
        for name in READ_OUTSIDE.findall(module.read_text())
    }
    assert read, "the pattern finds the reads"
    assert sorted(read - declared - OTHER_VARIABLES) == []
