"""`blackwidow export`: every item of a crawler to a file, streamed, with a progress bar."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import requests
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from blackwidow.client.hub_client import HubClient, Refused, cause
from blackwidow.client.options import CRAWLER, connected, window, window_params

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
CHUNK = 1 << 16


@click.command()
@click.argument("crawler_id", type=CRAWLER, metavar="CRAWLER")
@click.option(
    "-o",
    "--output",
    "path",
    required=True,
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="The file to write (.csv or .jsonl).",
)
@window
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("csv", "jsonl")),
    help="File format (default: from the file's extension).",
)
@connected
def export(
    hub: HubClient,
    crawler_id: int,
    path: Path,
    since: str | None,
    until: str | None,
    by: str,
    fmt: str | None,
) -> None:
    """Write every item of a crawler (in a time window, if given) to a file, newest first.

    The file appears only when the export is whole: it is written under a temporary name
    and renamed at the end, so an interrupted export leaves nothing half-written."""
    fmt = fmt or FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise click.BadParameter(
            f"{path.name}: cannot tell the format from its extension; give --format",
            param_hint="--output",
        )
    total = hub.json("GET", f"/api/v1/crawlers/{crawler_id}")["items_collected"]
    response = hub.stream(
        f"/api/v1/crawlers/{crawler_id}/items.{fmt}", window_params(since, until, by)
    )
    partial = path.with_name(f".{path.name}.partial")
    try:
        with open(partial, "wb") as out, _progress(total) as advance:
            written = 0
            for count, chunk in count_records(response.iter_content(CHUNK), fmt):
                out.write(chunk)
                written += count
                advance(count)
        os.replace(partial, path)
    except requests.RequestException as error:
        raise Refused(
            f"error: the export was cut short ({cause(error)}); nothing written"
        ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    click.echo(f"wrote {written} items to {path}", err=True)


def count_records(chunks: Iterator[bytes], fmt: str) -> Iterator[tuple[int, bytes]]:
    """Each chunk with the number of records it ends: line breaks, in CSV only those outside
    quoted fields (a quote opens or closes one; a doubled quote does both), less the header."""
    quoted = False
    header = fmt == "csv"
    for chunk in chunks:
        if fmt == "jsonl":
            yield chunk.count(b"\n"), chunk
            continue
        ends = 0
        for index, part in enumerate(chunk.split(b'"')):
            if index:
                quoted = not quoted
            if not quoted:
                ends += part.count(b"\n")
        if header and ends:
            ends, header = ends - 1, False
        yield ends, chunk


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on a terminal (stderr), toward the crawler's item count; nothing else."""
    if not sys.stderr.isatty():
        yield lambda count: None
        return
    columns = (
        TextColumn("exporting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("export", total=total or None)
        yield lambda count: progress.advance(task, count)
