"""The options every analyst command shares: which hub, which token, which crawler, parsed
instants."""

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
        hub = HubClient(resolve(hub_url, token))
        for key, value in kwargs.items():
            if isinstance(value, CrawlerName):
                kwargs[key] = _crawler_id(hub, value, key)
            elif isinstance(value, tuple):  # a repeated option
                kwargs[key] = tuple(
                    _crawler_id(hub, v, key) if isinstance(v, CrawlerName) else v for v in value
                )
        return command(*args, hub=hub, **kwargs)

    return with_hub


class CrawlerName(str):
    """A crawler given by name: `connected` looks up its id once it has a hub."""


class CrawlerParam(click.ParamType):
    """A crawler's id, or its exact name (looked up through the API's list filter)."""

    name = "crawler"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        if text.isdecimal():
            return int(text)
        if not text:
            self.fail("give a crawler's id or name", param, ctx)
        return CrawlerName(text)


CRAWLER = CrawlerParam()


def _crawler_id(hub: HubClient, name: str, parameter: str) -> int:
    """The id of the one crawler (of those the token sees) named exactly `name`; a usage
    error (exit status 2) when none is, or several are."""
    holding = list(hub.every("/api/v1/crawlers", {"name": name, "limit": 1000}))
    exact = [crawler["id"] for crawler in holding if crawler["name"] == name]
    if len(exact) == 1:
        return exact[0]
    context = click.get_current_context()
    param = next(p for p in context.command.params if p.name == parameter)
    if exact:
        ids = ", ".join(str(crawler_id) for crawler_id in exact)
        message = f"{len(exact)} crawlers are named {name!r} (ids {ids}): give the id"
    else:
        near = ", ".join(f"{c['name']!r} ({c['id']})" for c in holding[:3])
        message = f"no crawler named {name!r}" + (f"; names holding it: {near}" if near else "")
    raise click.BadParameter(message, ctx=context, param=param)


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
