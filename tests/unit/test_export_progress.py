"""How `blackwidow export` counts the records it has written, for its progress bar."""

from __future__ import annotations

import csv
import io
import json

import pytest

from blackwidow.client.export_command import count_records

AWKWARD = [
    {"id": "1", "title": 'a "quoted"\nline break', "text": "comma, here"},
    {"id": "2", "title": "", "text": '""'},
    {"id": "3", "title": "\n\n", "text": "plain"},
]


def _csv_bytes() -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, ["id", "title", "text"])
    writer.writeheader()
    writer.writerows(AWKWARD)
    return out.getvalue().encode()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_csv_records_are_counted_whatever_the_chunks_cut_through(size: int) -> None:
    data = _csv_bytes()
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    counted = list(count_records(iter(chunks), "csv"))
    assert sum(count for count, _ in counted) == len(AWKWARD)
    assert b"".join(chunk for _, chunk in counted) == data


def test_json_lines_are_counted_by_line() -> None:
    data = "".join(json.dumps(row) + "\n" for row in AWKWARD).encode()
    assert sum(count for count, _ in count_records(iter([data[:10], data[10:]]), "jsonl")) == 3
