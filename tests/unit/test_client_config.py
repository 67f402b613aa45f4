"""Where the analysts' commands find their hub and token, and the login file they keep."""

from __future__ import annotations

import stat
from pathlib import Path

import click
import pytest

from blackwidow.client import config
from blackwidow.client.config import Connection


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


def test_options_win_over_the_login_file_and_the_file_fills_in_the_rest() -> None:
    config.save(Connection("http://saved:8000", "saved-token"))
    assert config.resolve(None, None) == Connection("http://saved:8000", "saved-token")
    assert config.resolve("http://given:1/", None) == Connection("http://given:1", "saved-token")
    assert config.resolve(None, "given") == Connection("http://saved:8000", "given")


@pytest.mark.parametrize(
    ("hub", "token", "named"), [(None, "t", "--hub"), ("http://h", None, "--token")]
)
def test_a_missing_hub_or_token_is_a_usage_error_naming_its_option(
    hub: str | None, token: str | None, named: str
) -> None:
    with pytest.raises(click.UsageError, match=named):
        config.resolve(hub, token)


def test_the_login_file_is_readable_by_its_owner_only_and_replaced_whole(config_home: Path) -> None:
    path = config.save(Connection("http://a", "first"))
    config.save(Connection("http://a", "second"))
    assert path == config_home / "blackwidow" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.resolve(None, None).token == "second"
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]  # no temporary left


def test_a_login_file_that_is_not_ours_is_named_not_guessed_around(config_home: Path) -> None:
    path = config_home / "blackwidow" / "config.json"
    path.parent.mkdir()
    path.write_text("[1, 2]")
    with pytest.raises(click.UsageError, match="not a login file"):
        config.resolve(None, None)
    path.write_text("{not json")
    with pytest.raises(click.UsageError, match=str(path)):
        config.resolve(None, None)


def test_logout_removes_the_file_once() -> None:
    config.save(Connection("http://a", "t"))
    assert config.forget() is True
    assert config.forget() is False
