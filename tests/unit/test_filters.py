"""Keyword filter: case-insensitive whole words in title or text; keywords are literal text."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sources.filters import keyword_matcher, matches
from sources.model import Item


def item(title: str | None = None, text: str | None = None) -> Item:
    return Item(
        id="id-1",
        source="rss",
        url="https://example.com/1",
        title=title,
        text=text,
        author=None,
        published_at=None,
        fetched_at=datetime(2024, 5, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize("keywords", [[], [""], ["   ", "\t"]])
@pytest.mark.parametrize("entry", [item(), item("anything"), item(text="at all")])
def test_no_keywords_match_everything(keywords, entry):
    pattern = keyword_matcher(keywords)
    assert pattern is None
    assert matches(pattern, entry)


@pytest.mark.parametrize(
    ("keywords", "entry", "expected"),
    [
        # whole words, any case, in title or text
        (["python"], item("Python 3.13 released"), True),
        (["PYTHON"], item("python 3.13 released"), True),
        (["python"], item(text="We love PyThOn."), True),
        (["python"], item("Release notes", "about python"), True),
        (["python"], item("(python)"), True),
        (["python"], item("python-dev list"), True),
        (["rust", "python"], item("Rust wins"), True),
        (["machine learning"], item("New Machine Learning course"), True),
        # not inside other words
        (["python"], item("Pythonic idioms"), False),
        (["python"], item("cpython internals"), False),
        (["python"], item("python_tools"), False),
        (["go"], item("Going places", "google it"), False),
        # nothing to search
        (["python"], item(), False),
        (["python"], item("", ""), False),
        (["python"], item("Rust", "Go"), False),
        # blank keywords are ignored, not "match everything"
        (["", "  ", "python"], item("Rust"), False),
        (["", "  ", "python"], item("python"), True),
        # surrounding blanks are trimmed
        (["  python  "], item("python news"), True),
    ],
)
def test_whole_word_matching(keywords, entry, expected):
    assert matches(keyword_matcher(keywords), entry) is expected


@pytest.mark.parametrize(
    ("keywords", "entry", "expected"),
    [
        (["c++"], item("Modern C++ tips"), True),
        (["c++"], item("Modern C tips"), False),
        (["c++"], item("c+ is not a language"), False),
        (["a.b"], item("see a.b here"), True),
        (["a.b"], item("see axb here"), False),
        (["(x)"], item("call (x) now"), True),
        (["(x)"], item("call x now"), False),
        (["[ab]"], item("a"), False),
        (["a|b"], item("a"), False),
        (["a|b"], item("it is a|b"), True),
        ([".*"], item("anything"), False),
        (["$5"], item("only $5 today"), True),
    ],
)
def test_regex_metacharacters_are_literal(keywords, entry, expected):
    assert matches(keyword_matcher(keywords), entry) is expected
