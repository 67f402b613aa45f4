"""Calls to the hub's REST API: one session, one way errors become exit statuses, one way
pages are followed (the `Link: <...>; rel="next"` header every list sends)."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import IO, Any

import click
import requests

from blackwidow.client.config import HubConnection

TIMEOUT = 30.0  # seconds to connect and between bytes; exports stream for longer than this


class Refused(click.ClickException):
    """The hub answered with an error, or could not be reached: exit status 1."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        """The message alone, `error: ...`, without click's own `Error: ` before it."""
        click.echo(self.message, file=file, err=True)


class HubClient:
    def __init__(self, connection: HubConnection) -> None:
        self.connection = connection
        self.url = connection.hub_url
        self._session = requests.Session()
        self._session.headers["Authorization"] = f"Bearer {connection.token}"

    def call(
        self, method: str, path: str, allow: Collection[int] = (), **kwargs: Any
    ) -> requests.Response:
        """One request; a refusal raises Refused with the hub's message and field, unless its
        status is one the caller `allow`s and looks at itself."""
        url = path if path.startswith(("http://", "https://")) else f"{self.url}{path}"
        try:
            response = self._session.request(method, url, timeout=TIMEOUT, **kwargs)
        except requests.RequestException as error:
            raise Refused(f"error: cannot reach the hub at {self.url}: {cause(error)}") from None
        if response.status_code >= 400 and response.status_code not in allow:
            raise Refused(refusal(response))
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.call(method, path, **kwargs)
        return response.json() if response.content else None

    def every(
        self, path: str, params: dict[str, Any] | None = None, key: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every row of a list, page after page as its Link headers lead, read as they come.
        A page is the rows themselves, or an object holding them under `key` (the items')."""
        url: str | None = path
        while url is not None:
            response = self.call("GET", url, params=params)
            page = response.json()
            yield from page if key is None else page[key]
            url, params = response.links.get("next", {}).get("url"), None

    def stream(self, path: str, params: dict[str, Any]) -> requests.Response:
        """A streamed answer (an export), its status checked before the body is read."""
        return self.call("GET", path, params=params, stream=True)


def refusal(response: requests.Response) -> str:
    """`error: <message> (field <field>)` from the hub's error body, or its status line."""
    try:
        error = response.json()["error"]
        message, field = error["message"], error.get("field")
    except (ValueError, KeyError, TypeError):
        return f"error: the hub answered {response.status_code} {response.reason}"
    return f"error: {message}" + (f" (field {field})" if field else "")


def cause(error: BaseException) -> BaseException:
    """What failed beneath requests' and urllib3's wrappers (`[Errno 111] HubConnection refused`,
    `Name or service not known`, `timed out`): their own messages fill a screen."""
    while (inner := error.__cause__ or error.__context__) is not None:
        error = inner
    return error
