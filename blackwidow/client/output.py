"""What the commands print: a readable table on a terminal, machine formats when piped or
asked for (`--format`). The machine formats use the hub's own field names; a table may head a
column shorter and let a long column give way, to fit the terminal's width."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

FORMATS = ("table", "json", "jsonl", "csv")


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
    """A field as a table shows it: under `heading` (default: the field's name); a `squeezed`
    column gives way to the others on a narrow terminal, its cells cut short with `…`, so
    each record stays on one line."""

    field: str
    heading: str | None = None
    squeezed: bool = False


def rows(
    records: Iterable[dict[str, Any]],
    columns: Sequence[str],
    fmt: str,
    table: Sequence[Column] | None = None,
) -> None:
    """Print records as `fmt`: a table shows `table` (default: `columns`); JSON lines every
    field; CSV `columns` under a header. Machine formats print each record as it comes."""
    if fmt == "table":
        _table(records, table or [Column(column) for column in columns])
    elif fmt == "json":
        click.echo(json.dumps(list(records), indent=2))
    else:
        _machine(records, columns, fmt)


def _table(records: Iterable[dict[str, Any]], columns: Sequence[Column]) -> None:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in columns:
        table.add_column(column.heading or column.field, no_wrap=not column.squeezed)
    for record in records:
        table.add_row(*(_cell(record.get(column.field), column) for column in columns))
    Console().print(table)


def _cell(value: Any, column: Column) -> Text:
    if column.squeezed:
        return Text(_flat(value), no_wrap=True, overflow="ellipsis")
    return Text(_flat(value))


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
    value = (per_second or 0) * 60
    if not value:
        return "0/min"
    return f"{value:.1f}/min" if value < 10 else f"{value:.0f}/min"


def rate_over(crawler: dict[str, Any]) -> str:
    """A crawler's rate naming its window, as the dashboard writes it: `12.3/min over 5 min`."""
    seconds = crawler.get("rate_window_seconds") or 0
    window = f"{seconds:.0f} s" if seconds < 120 else f"{round(seconds / 60, 1):g} min"
    return f"{per_minute(crawler.get('rate'))} over {window}"


def _flat(value: Any) -> str:
    """A nested value (a query, a list) as compact JSON in one cell; null as nothing. Cells
    are plain Text: brackets in a title are not taken for markup."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)
