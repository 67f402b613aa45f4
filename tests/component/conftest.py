"""Component fixtures: the real hub app on a real, migrated SQLite database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blackwidow import db
from blackwidow.app import create_app
from blackwidow.demo.feed_server import FeedServer
from blackwidow.settings import Settings

ADMIN = "admin-token-for-tests"
SECRET = "cluster-secret-for-tests"


@pytest.fixture
def hub_app(tmp_path) -> Flask:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'hub.db'}",
        store_url=f"sqlite:///{tmp_path / 'items.db'}",
        admin_token=ADMIN,
        cluster_secret=SECRET,
    )
    db.upgrade(settings.database_url)
    return create_app(settings)


@pytest.fixture
def client(hub_app: Flask) -> FlaskClient:
    return hub_app.test_client()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def make_user(client: FlaskClient) -> Callable[..., dict[str, Any]]:
    def _make(name: str = "ana", item_limit: int | None = None) -> dict[str, Any]:
        response = client.post(
            "/api/v1/users", json={"name": name, "item_limit": item_limit}, headers=bearer(ADMIN)
        )
        assert response.status_code == 201, response.json
        return response.json

    return _make


@pytest.fixture
def feeds() -> Iterator[FeedServer]:
    """The sample-feed server in this process, on a loopback port."""
    server = FeedServer()
    server.start()
    yield server
    server.stop()
