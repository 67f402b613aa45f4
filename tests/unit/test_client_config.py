"""Where the analysts' commands find their hub and token, and the login file they keep."""

from __future__ import annotations

import stat
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from blackwidow.client import config
from blackwidow.client.config import HUB_ENV, TOKEN_ENV, HubConnection
from blackwidow.client.hub_client import HubClient
from blackwidow.client.options import connected


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


def test_options_win_over_the_login_file_and_the_file_fills_in_the_rest() -> None:
    config.save(HubConnection("http://saved:8000", "saved-token"))
    assert config.resolve(None, None) == HubConnection("http://saved:8000", "saved-token")
    assert config.resolve("http://given:1/", None) == HubConnection("http://given:1", "saved-token")
    assert config.resolve(None, "given") == HubConnection("http://saved:8000", "given")


@pytest.mark.parametrize(
    ("hub", "token", "named"), [(None, "t", "--hub"), ("http://h", None, "--token")]
)
def test_a_missing_hub_or_token_is_a_usage_error_naming_its_option(
    hub: str | None, token: str | None, named: str
) -> None:
    with pytest.raises(click.UsageError, match=named):
        config.resolve(hub, token)


def test_the_login_file_is_readable_by_its_owner_only_and_replaced_whole(config_home: Path) -> None:
    path = config.save(HubConnection("http://a", "first"))
    config.save(HubConnection("http://a", "second"))
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
    config.save(HubConnection("http://a", "t"))
    assert config.forget() is True
    assert config.forget() is False


@click.command()
@connected
def where(hub: HubClient) -> None:
    click.echo(f"{hub.connection.hub_url} {hub.connection.token}")


@pytest.mark.parametrize(
    ("args", "env", "resolved"),
    [
        ([], {}, "http://file f"),
        ([], {TOKEN_ENV: "e"}, "http://file e"),
        ([], {HUB_ENV: "http://env", TOKEN_ENV: "e"}, "http://env e"),
        (["--token", "o"], {HUB_ENV: "http://env", TOKEN_ENV: "e"}, "http://env o"),
        (["--hub", "http://opt/", "--token", "o"], {HUB_ENV: "http://env"}, "http://opt o"),
    ],
)
def test_a_command_takes_its_options_then_the_environment_then_the_login_file(
    args: list[str], env: dict[str, str], resolved: str
) -> None:
    config.save(HubConnection("http://file", "f"))
    result = CliRunner().invoke(where, args, env={HUB_ENV: None, TOKEN_ENV: None, **env})
    assert (result.exit_code, result.output.strip()) == (0, resolved)


def test_a_command_with_no_hub_anywhere_exits_2_naming_the_option() -> None:
    result = CliRunner().invoke(where, [], env={HUB_ENV: None, TOKEN_ENV: "t"})
    assert result.exit_code == 2 and "--hub" in result.output


def test_the_token_stays_out_of_the_connection_repr() -> None:
    assert "s3cret" not in repr(HubConnection("http://a", "s3cret"))
