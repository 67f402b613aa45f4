"""`blackwidow crawlers ...`: a user's crawlers, created, changed and listed over REST, and
their feeds moved in and out as OPML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from blackwidow import name_rule
from blackwidow.client import output
from blackwidow.client.hub_client import HubClient
from blackwidow.client.options import CRAWLER, connected

COLUMNS = ("id", "name", "source", "state", "enabled", "items_collected", "node_id", "last_error")
# the table fits 80 columns: `enabled` is in the state already (disabled), long names and
# errors give way
TABLE = (
    output.Column("id"),
    output.Column("name", squeezed=True),
    output.Column("source"),
    output.Column("state"),
    output.Column("items_collected", "items"),
    output.Column("per_minute", "rate"),  # `rate`, per minute (rate_window_seconds: show)
    output.Column("node_id", "node"),
    output.Column("last_error", squeezed=True),
)
IMPORTED = ("id", "name", "source", "state", "query")


@click.group()
def crawlers() -> None:
    """A user's crawlers (the admin sees everyone's)."""


@crawlers.command("ls")
@click.option("--state", help="Only crawlers in this state (running, limit_reached, ...).")
@click.option("--source", help="Only this source type (rss, twitter, ...).")
@click.option("--name", help="Only crawlers whose name holds this text, in any case.")
@output.format_option()
@connected
def list_crawlers(hub: HubClient, fmt: str, **filters: str | None) -> None:
    """List crawlers, every page of them."""
    params = {name: value for name, value in filters.items() if value is not None}
    listed = hub.every("/api/v1/crawlers", {**params, "limit": 1000})
    if fmt == "table":
        listed = ({**c, "per_minute": output.per_minute(c.get("rate"))} for c in listed)
    output.rows(listed, COLUMNS, fmt, TABLE)


@crawlers.command("show")
@click.argument("crawler_id", type=CRAWLER, metavar="CRAWLER")
@output.format_option(default_piped="json")
@connected
def show(hub: HubClient, crawler_id: int, fmt: str) -> None:
    """One crawler, every field; the table writes its rate per minute, naming the window."""
    crawler = hub.json("GET", f"/api/v1/crawlers/{crawler_id}")
    if fmt == "table":
        crawler["rate"] = output.rate_over(crawler)
    output.record(crawler, fmt)


def _crawler_name(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    """The name as the hub would store it (blackwidow.name_rule), or a usage error, status 2,
    before anything is sent."""
    if value is None:
        return None
    try:
        return name_rule.checked(value)
    except name_rule.NameRefused as refused:
        raise click.BadParameter(str(refused)) from None


def _json_object(value: str, hint: str) -> Any:
    """A JSON object given on the command line; `null` passes, for the caller to refuse."""
    try:
        parsed = json.loads(value)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint=hint) from None
    if parsed is not None and not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object", param_hint=hint)
    return parsed


def _query(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    query = _json_object(value, "--query")
    if query is None:
        raise click.BadParameter("must be a JSON object", param_hint="--query")
    return query


SCHEDULE_HELP = (
    "When it polls, or the window it runs in, as JSON: '{\"every\": 300}', "
    '\'{"cron": "*/15 * * * *", "timezone": "Europe/Paris"}\' or '
    '\'{"cron": "0 9 * * 1-5", "for": 28800}\'.'
)
RECOLLECT_HELP = "Collect an item again, as a new version, once this many seconds have passed."


def _rss_query(feeds: tuple[str, ...], keywords: tuple[str, ...]) -> dict[str, Any]:
    query: dict[str, Any] = {"feeds": list(feeds)}
    if keywords:
        query["keywords"] = list(keywords)
    return query


@crawlers.command("add")
@click.option("--name", required=True, callback=_crawler_name, help="The crawler's name.")
@click.option("--source", default="rss", show_default=True, help="Source type.")
@click.option("--feed", "feeds", multiple=True, help="A feed URL (rss; repeat for more).")
@click.option("--keyword", "keywords", multiple=True, help="Keep only items with this word.")
@click.option("--query", "query_json", help="The whole query as JSON (any source).")
@click.option("--item-limit", type=click.IntRange(min=1), help="Stop after this many items.")
@click.option("--schedule", "schedule_json", help=SCHEDULE_HELP)
@click.option("--recollect-after", type=click.IntRange(min=1), help=RECOLLECT_HELP)
@click.option("--disabled", is_flag=True, help="Create it without running it.")
@output.format_option(default_piped="json")
@connected
def add(
    hub: HubClient,
    name: str,
    source: str,
    feeds: tuple[str, ...],
    keywords: tuple[str, ...],
    query_json: str | None,
    item_limit: int | None,
    schedule_json: str | None,
    recollect_after: int | None,
    disabled: bool,
    fmt: str,
) -> None:
    """Create a crawler: `--feed` for RSS, `--query` for any source."""
    query = _query(query_json)
    if query is None:
        if not feeds:
            raise click.UsageError("--feed: at least one feed, or the whole --query")
        query = _rss_query(feeds, keywords)
    body: dict[str, Any] = {"name": name, "source": source, "query": query}
    if item_limit is not None:
        body["item_limit"] = item_limit
    if schedule_json is not None:
        body["schedule"] = _json_object(schedule_json, "--schedule")
    if recollect_after is not None:
        body["recollect_after"] = recollect_after
    if disabled:
        body["enabled"] = False
    output.record(hub.json("POST", "/api/v1/crawlers", json=body), fmt)


@crawlers.command("edit")
@click.argument("crawler_id", type=CRAWLER, metavar="CRAWLER")
@click.option("--name", callback=_crawler_name, help="A new name.")
@click.option("--feed", "feeds", multiple=True, help="Replace the feeds (rss; repeat).")
@click.option("--keyword", "keywords", multiple=True, help="Replace the keywords (rss; repeat).")
@click.option("--query", "query_json", help="Replace the whole query (JSON).")
@click.option("--item-limit", type=click.IntRange(min=1), help="A new item limit.")
@click.option("--schedule", "schedule_json", help=SCHEDULE_HELP[:-1] + "; null removes it.")
@click.option("--recollect-after", type=click.IntRange(min=1), help=RECOLLECT_HELP)
@click.option("--enable/--disable", "enabled", default=None, help="Run it, or stop it.")
@output.format_option(default_piped="json")
@connected
def edit(
    hub: HubClient,
    crawler_id: int,
    feeds: tuple[str, ...],
    keywords: tuple[str, ...],
    query_json: str | None,
    schedule_json: str | None,
    fmt: str,
    **changes: Any,
) -> None:
    """Change a crawler; what is not given stays as it is."""
    edits = {name: value for name, value in changes.items() if value is not None}
    if schedule_json is not None:
        edits["schedule"] = _json_object(schedule_json, "--schedule")
    query = _query(query_json)
    if query is None and (feeds or keywords):
        current = hub.json("GET", f"/api/v1/crawlers/{crawler_id}")["query"]
        query = {**current, **_rss_query(feeds or tuple(current.get("feeds", ())), keywords)}
    if query is not None:
        edits["query"] = query
    if not edits:
        raise click.UsageError("nothing to change: give --name, --feed, --item-limit, ...")
    output.record(_patch(hub, crawler_id, edits), fmt)


def _patch(hub: HubClient, crawler_id: int, edits: dict[str, Any]) -> dict[str, Any]:
    return hub.json("PATCH", f"/api/v1/crawlers/{crawler_id}", json=edits)


@crawlers.command("enable")
@click.argument("crawler_id", type=CRAWLER, metavar="CRAWLER")
@connected
def enable(hub: HubClient, crawler_id: int) -> None:
    """Run a crawler again."""
    click.echo(f"crawler {crawler_id}: {_patch(hub, crawler_id, {'enabled': True})['state']}")


@crawlers.command("disable")
@click.argument("crawler_id", type=CRAWLER, metavar="CRAWLER")
@connected
def disable(hub: HubClient, crawler_id: int) -> None:
    """Stop a crawler, keeping it and its items."""
    click.echo(f"crawler {crawler_id}: {_patch(hub, crawler_id, {'enabled': False})['state']}")


@crawlers.command("rm")
@click.argument("crawler_id", type=CRAWLER, metavar="CRAWLER")
@click.option("--yes", is_flag=True, help="Do not ask.")
@connected
def remove(hub: HubClient, crawler_id: int, yes: bool) -> None:
    """Delete a crawler (its stored items stay readable until they expire)."""
    if not yes:
        click.confirm(f"delete crawler {crawler_id}?", abort=True)
    hub.call("DELETE", f"/api/v1/crawlers/{crawler_id}")
    click.echo(f"crawler {crawler_id} deleted")


@crawlers.command("import")
@click.argument("opml", type=click.File("rb"))
@click.option(
    "--group-by",
    type=click.Choice(("one-each", "outline", "one-all")),
    default="one-each",
    show_default=True,
    help="A crawler per feed, per category (outline), or one for all.",
)
@click.option("--keywords", "keywords", multiple=True, help="Keywords for every crawler made.")
@output.format_option()
@connected
def import_opml(
    hub: HubClient, opml: Any, group_by: str, keywords: tuple[str, ...], fmt: str
) -> None:
    """Create RSS crawlers from an OPML file (Miniflux, FreshRSS, Feedly, ... exports, or
    export-opml's), all or none. Feeds you crawl already with the same keywords, and crawlers
    of export-opml you have a crawler of the same name of, are skipped, and said so."""
    answer = hub.json(
        "POST",
        "/api/v1/crawlers/import",
        params={"group_by": group_by, "keywords": list(keywords)},
        data=opml.read(),
        headers={"Content-Type": "text/x-opml"},
    )
    output.rows(answer["crawlers"], IMPORTED, fmt)
    for skipped in answer.get("skipped", []):
        why = f"crawler {skipped['crawler_id']} has it" if skipped["crawler_id"] else "listed twice"
        click.echo(f"skipped {skipped['url']} ({skipped['outline']}): {why}", err=True)
    for skipped in answer.get("skipped_crawlers", []):
        differs = ", ".join(skipped["differs"])
        why = f"differs in {differs}, left as it is" if differs else "is the same"
        said = f"skipped crawler {skipped['name']!r} ({skipped['outline']})"
        click.echo(f"{said}: crawler {skipped['crawler_id']} {why}", err=True)


@crawlers.command("export-opml")
@click.option("-o", "--output", "path", type=click.Path(dir_okay=False, path_type=Path))
@connected
def export_opml(hub: HubClient, path: Path | None) -> None:
    """Write the RSS crawlers as OPML, to a file or standard output: feeds for any reader,
    and each crawler's keywords and settings for an import back."""
    document = hub.call("GET", "/api/v1/crawlers.opml").content
    if path is None:
        click.echo(document.decode(), nl=False)
    else:
        path.write_bytes(document)
        click.echo(f"wrote {path}", err=True)
