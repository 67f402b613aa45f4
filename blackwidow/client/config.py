"""Where the hub is and who is calling: options, then the environment, then the file that
`blackwidow login` writes (mode 0600 from its creation, in the user's config directory)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import click

HUB_ENV = "BLACKWIDOW_HUB_URL"
TOKEN_ENV = "BLACKWIDOW_TOKEN"


@dataclass(frozen=True)
class HubConnection:
    hub_url: str
    token: str = field(repr=False)  # a traceback or a log line never shows it


def config_path() -> Path:
    """The login file: $XDG_CONFIG_HOME/blackwidow/config.json on Linux (click's app dir)."""
    return Path(click.get_app_dir("blackwidow")) / "config.json"


def saved() -> dict[str, str]:
    """What `login` saved; nothing when there is no file. A file that is not ours is an error
    naming it rather than something to guess around."""
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise click.UsageError(
            f"{path}: not a login file ({error}); run `blackwidow login`"
        ) from None
    if not isinstance(data, dict):
        raise click.UsageError(f"{path}: not a login file; run `blackwidow login`")
    return {key: str(value) for key, value in data.items() if key in ("hub_url", "token")}


def resolve(hub_url: str | None, token: str | None) -> HubConnection:
    """The options (click has already read them from the environment when not given), else
    the login file; a missing one is a usage error naming its option and variable."""
    stored = saved()
    hub_url = hub_url or stored.get("hub_url")
    token = token or stored.get("token")
    if not hub_url:
        raise click.UsageError(f"--hub: no hub URL (set {HUB_ENV} or run `blackwidow login`)")
    if not token:
        raise click.UsageError(f"--token: no token (set {TOKEN_ENV} or run `blackwidow login`)")
    return HubConnection(hub_url.rstrip("/"), token)


def save(connection: HubConnection) -> Path:
    """Write the login file readable by its owner only: created 0600 under a temporary name,
    then renamed over the old one, so no other user ever reads a token from it."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump({"hub_url": connection.hub_url, "token": connection.token}, out)
    os.replace(partial, path)
    return path


def forget() -> bool:
    """Remove the login file; False when there was none."""
    try:
        config_path().unlink()
    except FileNotFoundError:
        return False
    return True
