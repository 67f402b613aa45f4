"""The words a search looks for: what every item found must hold."""

from __future__ import annotations

import pytest

from blackwidow.core.store.windows import words


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("fox", ("fox",)),
        ("Quick FOX", ("quick", "fox")),
        ("fox, fox! FOX", ("fox",)),
        ("snake_case and-dashes", ("snake", "case", "and", "dashes")),
        ('"quoted" OR NOT (x*)', ("quoted", "or", "not", "x")),
        ("Café 2024 CAFE", ("cafe", "2024")),
        ("Ångström naïve", ("angstrom", "naive")),
        ("", ()),
        ("... _ !", ()),
    ],
)
def test_a_query_is_cut_into_distinct_lowercase_words(query: str, expected: tuple) -> None:
    assert words(query) == expected
