"""A store URL that names no store this process can open is refused with the variable and the
cause (StoreRefused, which the entry points turn into one line and status 2), and nothing is
left half-made; a store that does not answer yet is not refused (it is an outage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blackwidow.core.store import StoreRefused, open_store


@pytest.mark.parametrize(
    ("shape", "cause"),
    [
        ("directory", "it is a directory, not a file"),
        ("under a file", "is a file, not a directory"),
        ("not a database", "DatabaseError: file is not a database"),
    ],
)
def test_a_sqlite_file_that_cannot_be_opened_is_refused_naming_the_variable(
    tmp_path: Path, shape: str, cause: str
) -> None:
    path = tmp_path / "items.db"
    if shape == "directory":
        path.mkdir()
    elif shape == "under a file":
        (tmp_path / "data").write_text("a file where a directory should be")
        path = tmp_path / "data" / "items.db"
    else:
        path.write_text("not sqlite")
    with pytest.raises(StoreRefused) as refused:
        open_store(f"sqlite:///{path}")
    assert str(refused.value).startswith(f"BLACKWIDOW_STORE: cannot open {path}: ")
    assert cause in str(refused.value)
    there = {"directory": ["items.db"], "under a file": ["data"], "not a database": ["items.db"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == there[shape]  # nothing made beside


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("items.db", "BLACKWIDOW_STORE: not a store URL"),
        ("mysql://db/items", "BLACKWIDOW_STORE: unsupported scheme 'mysql'"),
        ("sqlite://", "BLACKWIDOW_STORE: needs a file path after sqlite:///"),
        ("cassandra://", "BLACKWIDOW_STORE: "),
    ],
)
def test_a_store_url_of_no_store_is_refused_naming_the_variable(url: str, said: str) -> None:
    with pytest.raises(StoreRefused) as refused:
        open_store(url)
    assert str(refused.value).startswith(said)


def test_a_cassandra_that_does_not_answer_yet_is_an_outage_not_a_refusal() -> None:
    """It connects on first use: a node started before its Cassandra rides the wait out."""
    store = open_store("cassandra://127.0.0.1:9/items?connect_timeout=0.5")
    try:
        assert store.ping() is False
    finally:
        store.close()
