"""`blackwidow search`: the items that hold every word of a query, across the caller's
crawlers, as `GET /api/v1/items?q=` finds them."""

from __future__ import annotations

import itertools

import click

from blackwidow.client import output
from blackwidow.client.hub_client import HubClient
from blackwidow.client.item_commands import COLUMNS, PAGE
from blackwidow.client.options import CRAWLER, connected, window, window_params


@click.command()
@click.argument("query")
@click.option(
    "--crawler",
    "crawler_ids",
    type=CRAWLER,
    metavar="CRAWLER",
    multiple=True,
    help="Only this crawler's items (its id or name); repeat for several (default: all yours).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many of the items found.",
)
@window
@output.format_option(choices=("table", "jsonl", "csv"))
@connected
def search(
    hub: HubClient,
    query: str,
    crawler_ids: tuple[int, ...],
    limit: int,
    since: str | None,
    until: str | None,
    by: str,
    fmt: str,
) -> None:
    """The items whose title, text or author hold every word of QUERY, in any case: the most
    relevant first where the item store ranks (SQLite), at most `--limit`."""
    params = {
        "q": query,
        "crawler": list(crawler_ids),
        **window_params(since, until, by),
        "limit": min(limit, PAGE),
    }
    found = itertools.islice(hub.every("/api/v1/items", params, key="items"), limit)
    output.rows(list(found), ("crawler_id", *COLUMNS), fmt)
