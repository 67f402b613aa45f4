"""The dashboard's search page on the real app: what a signed-in user finds, and only theirs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flask import Flask
from flask.testing import FlaskClient

from blackwidow.dashboard.search_page import SHOWN_ITEMS
from sources.model import Item
from tests.component.test_access import PRIVATE, World, world
from tests.component.test_dashboard import sign_in

__all__ = ["world"]  # the access tests' fixture: two users, a crawler and an item each


def test_a_user_finds_their_own_items_and_never_another_users(
    client: FlaskClient, world: World
) -> None:
    sign_in(client, world.bob["token"])
    page = client.get("/search?q=ITEM")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "bob-item" in html and PRIVATE not in html
    assert "Nothing holds" in client.get("/search?q=private").get_data(as_text=True)
    mine = client.get(f"/search?q=item&crawler={world.bob_crawler['id']}")
    assert "bob-item" in mine.get_data(as_text=True)
    theirs = client.get(f"/search?q=item&crawler={world.ana_crawler['id']}")
    assert theirs.status_code == 422 and PRIVATE not in theirs.get_data(as_text=True)


def test_a_long_search_links_to_its_next_page(
    hub_app: Flask, client: FlaskClient, world: World
) -> None:
    at = datetime(2024, 5, 2, tzinfo=UTC)
    hub_app.extensions["blackwidow"].store.add(
        [
            Item(
                f"n{n}",
                "rss",
                None,
                f"news {n}",
                "",
                None,
                None,
                at + timedelta(seconds=n),
                crawler_id=world.bob_crawler["id"],
            )
            for n in range(SHOWN_ITEMS + 1)
        ]
    )
    sign_in(client, world.bob["token"])
    first = client.get("/search?q=news").get_data(as_text=True)
    assert first.count("news ") == SHOWN_ITEMS and 'rel="next"' in first
    following = first.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0]
    last = client.get(following.replace("&amp;", "&")).get_data(as_text=True)
    assert last.count("news ") == 1 and 'rel="next"' not in last


def test_bad_input_is_said_on_the_page(client: FlaskClient, world: World) -> None:
    sign_in(client, world.bob["token"])
    assert client.get("/search").status_code == 200  # the form alone
    answer = client.get("/search?q=news&since=yesterday")
    assert answer.status_code == 422 and "since: not a value" in answer.get_data(as_text=True)
