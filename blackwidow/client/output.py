"""What the commands print: a readable table on a terminal, machine formats when piped or
asked for (`--format`). The machine formats use the hub's own field names and values; a table
may head a column shorter, word a value for people (counts as `1,500,000`, ages), and lets its
long columns (names, URLs, errors) give way to fit the terminal's width, while every other
column, ids and states among them, is shown whole."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from blackwidow import wording

FORMATS = ("table", "json", "jsonl", "csv")
# the fields of free text a table without its own columns lets give way (squeezed)
GIVING_WAY = frozenset({"name", "url", "title", "author", "text", "query", "last_error"})


def format_option(default_piped: str = "jsonl", choices: Sequence[str] = FORMATS) -> Any:
    """`--format`: the table on a terminal, `default_piped` otherwise, unless asked."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        help=f"Output format (default: table on a terminal, {default_piped} when piped).",
        default=lambda: "table" if sys.stdout.isatty() else default_piped,
        show_default=False,
    )


@dataclass(frozen=True)
class Column:
    """A field as a table shows it: under `heading` (default: the field's name), worded by
    `shown` (default: counts with separators, ids bare). A `squeezed` column gives way to the
    others on a narrow terminal, its cells cut short with `…`, so each record stays on one
    line; any other column is never cut nor wrapped."""

    field: str
    heading: str | None = None
    squeezed: bool = False
    shown: Callable[[Any], str] | None = None


def rows(
    records: Iterable[dict[str, Any]],
    columns: Sequence[str],
    fmt: str,
    table: Sequence[Column] | None = None,
) -> None:
    """Print records as `fmt`: a table shows `table` (default: `columns`); JSON lines every
    field; CSV `columns` under a header. Machine formats print each record as it comes."""
    if fmt == "table":
        _table(records, table or [Column(c, squeezed=c in GIVING_WAY) for c in columns])
    elif fmt == "json":
        click.echo(json.dumps(list(records), indent=2))
    else:
        _machine(records, columns, fmt)


def _table(records: Iterable[dict[str, Any]], columns: Sequence[Column]) -> None:
    """A whole column is at least as wide as its widest cell, so rich, short of room, takes
    it from the squeezed ones (wrappable, so collapsed first, their cells cut with `…`)."""
    cells = [[_cell(record.get(column.field), column) for column in columns] for record in records]
    table = Table(box=None, header_style="bold", pad_edge=False)
    for n, column in enumerate(columns):
        heading = column.heading or column.field
        if column.squeezed:
            table.add_column(heading, no_wrap=False)
        else:
            widest = max([len(heading), *(row[n].cell_len for row in cells)])
            table.add_column(heading, no_wrap=True, min_width=widest)
    for row in cells:
        table.add_row(*row)
    Console().print(table)


def _cell(value: Any, column: Column) -> Text:
    shown = column.shown(value) if column.shown and value is not None else _worded(value, column)
    if column.squeezed:
        return Text(shown, no_wrap=True, overflow="ellipsis")
    return Text(shown)


def _worded(value: Any, column: Column) -> str:
    """A count with separators (`1,500,000`); an id (`id`, `node_id`) bare, as commands take
    it back; anything else flat."""
    is_id = column.field == "id" or column.field.endswith("_id")
    if isinstance(value, int) and not isinstance(value, bool) and not is_id:
        return wording.thousands(value)
    return _flat(value)


def age(value: str) -> str:
    """An instant as the hub writes it (ISO 8601, UTC) as its age: `4 s ago`."""
    instant = datetime.fromisoformat(value)
    instant = instant if instant.tzinfo else instant.replace(tzinfo=UTC)
    return wording.age((datetime.now(UTC) - instant).total_seconds())


def tail(records: Iterable[dict[str, Any]], columns: Sequence[str], fmt: str) -> None:
    """Print records that keep coming (`items --follow`): a table is a line each, under one
    header; the machine formats as `rows` prints them."""
    if fmt != "table":
        _machine(records, columns, fmt)
        return
    console = Console(highlight=False)
    console.print(Text("  ".join(columns), style="bold"))
    for record in records:
        console.print(Text("  ".join(_flat(record.get(column)) for column in columns)))


def _machine(records: Iterable[dict[str, Any]], columns: Sequence[str], fmt: str) -> None:
    """JSON lines or CSV, flushed a record at a time, so a pipe sees each as it is printed."""
    writer = csv.DictWriter(sys.stdout, columns, extrasaction="ignore") if fmt == "csv" else None
    if writer is not None:
        writer.writeheader()
    for record in records:
        if writer is not None:
            writer.writerow({name: _flat(value) for name, value in record.items()})
        else:
            sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def record(fields: dict[str, Any], fmt: str) -> None:
    """One record: a two-column table on a terminal, else JSON."""
    if fmt == "table":
        table = Table(box=None, show_header=False)
        for name, value in fields.items():
            table.add_row(Text(name, style="bold"), Text(_flat(value)))
        Console().print(table)
    else:
        click.echo(json.dumps(fields, indent=2 if fmt == "json" else None))


def per_minute(per_second: float | None) -> str:
    """A `rate` (items per second) per minute, as the dashboard writes it: `12.3/min`."""
    return wording.per_minute(per_second)


def rate_over(crawler: dict[str, Any]) -> str:
    """A crawler's rate naming its window, as the dashboard writes it: `12.3/min over 5 min`."""
    return wording.rate_over(crawler.get("rate"), crawler.get("rate_window_seconds") or 0)


def _flat(value: Any) -> str:
    """A nested value (a query, a list) as compact JSON in one cell; null as nothing. Cells
    are plain Text: brackets in a title are not taken for markup."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)
