"""The line bound on provider streams: a line past it ends the stream as it arrives."""

from __future__ import annotations

import pytest
from urllib3.exceptions import ProtocolError

from sources.api_session import _LineBounded


class Chunks:
    """What the bound wraps: a body that streams these chunks (urllib3's response in use)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    def stream(self, amt=None, decode_content=None):
        yield from self.chunks

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    "chunks",
    [
        [b"12345\n12345\r", b"\n", b"\r\n"],  # lines at the bound, keep-alives
        [b"123", b"45\n1", b"2345"],  # across chunks; the last line still open, at the bound
        [b"1\n22\n333\n"],
    ],
)
def test_lines_within_the_bound_pass_untouched(chunks):
    raw = Chunks(chunks)
    assert list(_LineBounded(raw, 6).stream(512)) == chunks
    assert not raw.closed


@pytest.mark.parametrize(
    "chunks",
    [
        [b"1234567\n"],  # ends in the chunk that crosses the bound
        [b"12", b"345", b"67"],  # never ends
        [b"ok\n1234567\nok\n"],  # a long line between short ones
        [b"12345", b"67\nok\n"],  # crosses where it ends
    ],
)
def test_a_line_past_the_bound_closes_the_body_and_raises(chunks):
    raw = Chunks(chunks)
    with pytest.raises(ProtocolError):
        list(_LineBounded(raw, 6).stream(512))
    assert raw.closed


def test_everything_else_is_the_wrapped_bodys():
    raw = Chunks([])
    assert _LineBounded(raw, 6).closed is False
