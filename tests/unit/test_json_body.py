"""Where a lone surrogate sits in a decoded JSON body: the field a 422 names."""

from __future__ import annotations

from typing import Any

import pytest

from blackwidow.api.json_body import lone_surrogate_at


def nested(depth: int, inner: Any) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"name": "fine", "query": {"feeds": ["https://a.example/"]}}, None),
        ("\ud800", ()),
        ({"name": "a\udfffb"}, ("name",)),
        ({"query": {"keywords": ["ok", "\ud800"]}}, ("query", "keywords", "1")),
        ({"first": "\ud800", "second": "\udbff"}, ("first",)),  # document order
        ({"ok": 1, "\ud800": 1}, ("\\ud800",)),  # a key: named printably
        ([1, None, True, 2.5, {"x": "é😀"}], None),  # real characters, surrogate pairs decoded
        (nested(5000, "\ud800"), ("0",) * 5000),  # deeper than recursion could go
    ],
)
def test_the_first_lone_surrogate_is_found_by_its_path(
    body: Any, path: tuple[str, ...] | None
) -> None:
    assert lone_surrogate_at(body) == path
