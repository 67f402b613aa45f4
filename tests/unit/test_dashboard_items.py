"""The crawler page's newest items: newest fetch first, and within one fetch newest published
first, so a feed's "story 10" comes before "story 9", never between "story 2" and "story 1"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from blackwidow.dashboard.crawler_pages import newest_first
from sources.model import Item

FETCHED = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def story(n: int, fetched_at: datetime = FETCHED, published: bool = True) -> Item:
    return Item(
        id=f"https://feeds.example/posts/{n}",
        source="rss",
        url=None,
        title=f"story {n}",
        text=None,
        author=None,
        published_at=FETCHED - timedelta(hours=1) + timedelta(seconds=n) if published else None,
        fetched_at=fetched_at,
    )


def titles(items: list[Item]) -> list[str | None]:
    return [item.title for item in items]


def test_one_fetch_reads_newest_published_first_not_by_id_as_text() -> None:
    stored = sorted((story(n) for n in range(1, 13)), key=lambda i: i.id, reverse=True)
    assert titles(newest_first(stored)) == [f"story {n}" for n in range(12, 0, -1)]


def test_a_later_fetch_comes_first_whatever_its_items_published_at() -> None:
    later = FETCHED + timedelta(seconds=30)
    items = [story(5), story(1, fetched_at=later), story(9)]
    assert titles(newest_first(items)) == ["story 1", "story 9", "story 5"]


def test_undated_items_of_a_fetch_come_after_its_dated_ones_by_id() -> None:
    items = [story(3, published=False), story(1), story(4, published=False), story(2)]
    assert titles(newest_first(items)) == ["story 2", "story 1", "story 4", "story 3"]
