"""The words a search looks for: what every item found must hold, whatever script, case or
Unicode normal form it is typed in."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import pytest

from blackwidow.core.store.windows import folded, searchable, words


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


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


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Ελλάδα ΕΛΛΆΔΑ ελλαδα", ("ελλαδα",)),
        ("Ζεύς ΖΕΥΣ", ("ζευσ",)),  # final sigma folds to sigma
        ("Ωκεανός", ("ωκεανοσ",)),
        ("ёлка ЁЛКА елка", ("елка",)),
        (nfd("Kraków"), ("krakow",)),  # a decomposed ó is o and a mark: one word still
        (nfd("naïve Ñandú"), ("naive", "nandu")),
        ("Straße STRASSE strasse", ("strasse",)),  # case folding, not lowercasing
        ("\N{LATIN CAPITAL LETTER SHARP S}", ("ss",)),
        ("Ｆｕｌｌ ｗｉｄｔｈ", ("full", "width")),  # noqa: RUF001 - NFKC: full-width is plain
        ("ﬁne ½", ("fine", "1", "2")),  # ligature and fraction, by compatibility
        ("\N{LATIN SMALL LETTER DOTLESS I}stanbul ISTANBUL İstanbul", ("istanbul",)),
    ],
)
def test_every_script_case_and_normal_form_is_cut_alike(query: str, expected: tuple) -> None:
    assert words(query) == expected


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
@pytest.mark.parametrize("case", [str.upper, str.lower, str.title, str.casefold])
def test_a_folded_word_stays_itself_in_any_form_and_case(
    form: str, case: Callable[[str], str]
) -> None:
    text = "Ελλάδα Ζεύς Ωκεανός ёлка Kraków naïve Ñandú Straße Ｆｕｌｌ"  # noqa: RUF001
    assert words(unicodedata.normalize(form, case(text))) == words(text)
    assert words(" ".join(words(text))) == words(text)


def test_what_sqlite_indexes_keeps_each_word_as_often_as_it_occurs() -> None:
    assert searchable("Big, BIG big dog!") == "big big big dog"
    assert searchable(nfd("Ελλάδα, Ελλάδα")) == "ελλαδα ελλαδα"
    assert searchable(None) is None
    assert folded("ASCII stays, lowered") == "ascii stays, lowered"
