"""The options every analyst command shares: which hub, which token, parsed instants."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from blackwidow.client.config import HUB_ENV, TOKEN_ENV, resolve
from blackwidow.client.hub_client import HubClient


def connected(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command `--hub` and `--token`, resolved (blackwidow.client.config) into the
    HubClient it receives as `hub`."""

    @click.option("--hub", "hub_url", envvar=HUB_ENV, help=f"Hub URL [env {HUB_ENV}].")
    @click.option(
        "--token",
        envvar=TOKEN_ENV,
        help=f"Bearer token [env {TOKEN_ENV}]. Given here it shows in process listings:"
        " prefer the variable or `blackwidow login`.",
    )
    @functools.wraps(command)
    def with_hub(*args: Any, hub_url: str | None, token: str | None, **kwargs: Any) -> Any:
        return command(*args, hub=HubClient(resolve(hub_url, token)), **kwargs)

    return with_hub


def _instant(context: click.Context, parameter: click.Parameter, value: str | None) -> Any:
    """An ISO 8601 instant, passed on as given (the hub reads a naive one as UTC)."""
    if value is None:
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 date or instant") from None
    return value


def window(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--since`, `--until` and `--by`: the items of a time window, as the hub's API takes it."""
    for option in reversed(
        (
            click.option("--since", callback=_instant, help="From this instant (inclusive)."),
            click.option("--until", callback=_instant, help="Before this instant (exclusive)."),
            click.option(
                "--by",
                type=click.Choice(("fetched_at", "published_at")),
                default="fetched_at",
                show_default=True,
                help="The time the window is on.",
            ),
        )
    ):
        command = option(command)
    return command


def window_params(since: str | None, until: str | None, by: str) -> dict[str, str]:
    given = {"since": since, "until": until}
    return {"by": by, **{name: value for name, value in given.items() if value is not None}}
