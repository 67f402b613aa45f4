"""The name rule: a name is one trimmed line of text with nothing XML cannot carry; a name made
of a file's text is fitted to it rather than refused."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from blackwidow.name_rule import FALLBACK, NAME_LENGTH, NameRefused, checked, made_up


@given(st.text(max_size=NAME_LENGTH + 20))
def test_a_name_taken_is_trimmed_stays_itself_and_survives_an_xml_attribute(text: str) -> None:
    try:
        name = checked(text)
    except NameRefused:
        return
    assert name == text.strip() and checked(name) == name
    assert ET.fromstring(ET.tostring(ET.Element("outline", text=name))).get("text") == name


@given(st.text(max_size=NAME_LENGTH * 2))
def test_a_made_up_name_always_passes_the_rule(text: str) -> None:
    assert checked(made_up(text)) == made_up(text)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Caf\u00e9\u0085\u0085News", "Caf\u00e9 News"),
        ("\x07\x1b", FALLBACK),
        ("  Tech  ", "Tech"),
        ("x" * (NAME_LENGTH - 1) + " \x07tail", "x" * (NAME_LENGTH - 1)),
    ],
)
def test_a_made_up_name_has_a_space_for_each_run_of_unfit_characters(text: str, name: str) -> None:
    assert made_up(text) == name
