"""Why X refused a stream connection, read from its problem body."""

from __future__ import annotations

import pytest

from sources.twitter.connection import TOO_MANY_CONNECTIONS, connection_issue

# X's answer when the app's one connection is taken (docs.x.com, handling disconnections)
TAKEN = (
    b'{"title":"ConnectionException","detail":"This stream is currently at the maximum allowed '
    b'connection limit.","connection_issue":"TooManyConnections",'
    b'"type":"https://api.twitter.com/2/problems/streaming-connection"}'
)


def test_too_many_connections_is_read_from_xs_problem():
    assert connection_issue(TAKEN) == TOO_MANY_CONNECTIONS


@pytest.mark.parametrize(
    "body",
    [
        b'{"title":"Too Many Requests","detail":"Too Many Requests","status":429}',  # a rate limit
        b"",
        b"not json",
        TAKEN[:40],  # cut short at the byte bound
        b'["TooManyConnections"]',
        b'{"connection_issue": 7}',
    ],
)
def test_anything_else_has_no_connection_issue(body):
    assert connection_issue(body) is None
