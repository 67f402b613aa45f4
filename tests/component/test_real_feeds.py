"""parse_feed over the corpus of real captured feeds (tests/data/feeds/real): every entry that
feedparser, by itself, finds in a feed becomes an item; nothing real is refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sources.rss.parse import parse_feed
from tests.servers.feed_corpus import MANIFEST, REAL, distinct_entries, feedparser_alone

FETCHED_AT = datetime(2024, 5, 1, tzinfo=UTC)


def test_the_manifest_lists_every_file_of_the_corpus() -> None:
    on_disk = {path.name for path in REAL.iterdir()} - {"manifest.json", "SOURCES.md"}

    assert set(MANIFEST) == on_disk
    assert len(MANIFEST) >= 40


@pytest.mark.parametrize(("name", "content_type"), sorted(MANIFEST.items()))
def test_every_entry_feedparser_reads_becomes_an_item(name: str, content_type: str) -> None:
    body = (REAL / name).read_bytes()
    alone = feedparser_alone(name)

    items, _, _ = parse_feed(
        body, f"https://feeds.example/{name}", FETCHED_AT, {"Content-Type": content_type}
    )

    assert len(items) == distinct_entries(alone)
    assert len({item.id for item in items}) == len(items)
    assert all(item.title or item.text or item.url for item in items)


def test_most_of_the_corpus_has_entries_and_some_html() -> None:
    """A guard against a corpus (or a parser) that silently reads nothing."""
    with_entries = html = 0
    for name, content_type in MANIFEST.items():
        items, _, _ = parse_feed(
            (REAL / name).read_bytes(),
            "https://f.example/",
            FETCHED_AT,
            {"Content-Type": content_type},
        )
        with_entries += bool(items)
        html += any(item.html for item in items)

    assert with_entries >= 0.9 * len(MANIFEST)
    assert html >= 0.8 * with_entries
