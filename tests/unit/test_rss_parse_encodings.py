"""parse_feed decodes a feed as a browser would: the HTTP charset, then the XML declaration
and the BOM, with fallbacks for the undeclared (feedparser's order, RFC 3023)."""

from __future__ import annotations

import codecs
from datetime import UTC, datetime

import pytest

from sources.rss.parse import content_type, parse_feed

FETCHED_AT = datetime(2024, 5, 1, tzinfo=UTC)
TITLE = "Café — Привет"


def feed(title: str = TITLE, declaration: str | None = "utf-8") -> str:
    prefix = f'<?xml version="1.0" encoding="{declaration}"?>\n' if declaration else ""
    return (
        prefix + '<rss version="2.0"><channel><title>t</title>'
        f"<item><guid>1</guid><title>{title}</title></item></channel></rss>"
    )


def title(body: bytes, headers: dict[str, str]) -> str | None:
    [item] = parse_feed(body, "https://x.example/feed", FETCHED_AT, headers)[0]
    return item.title


CASES = [
    # (case, body, response headers, title read)
    ("UTF-8, declared", feed().encode(), {"Content-Type": "application/rss+xml"}, TITLE),
    ("UTF-8, nothing declared", feed(declaration=None).encode(), {}, TITLE),
    (
        "the HTTP charset wins over the declaration",
        feed("Привет", "utf-8").encode("windows-1251"),
        {"Content-Type": "application/xml; charset=windows-1251"},
        "Привет",
    ),
    (
        "the declaration, when HTTP names no charset",
        feed("Привет", "windows-1251").encode("windows-1251"),
        {"Content-Type": "application/rss+xml"},
        "Привет",
    ),
    (
        "Latin-1 served with its charset, no declaration",
        feed("Café", None).encode("latin-1"),
        {"Content-Type": "application/rss+xml; charset=ISO-8859-1"},
        "Café",
    ),
    (
        "undeclared Latin-1 falls back to windows-1252",
        feed("Café € 1", None).encode("windows-1252"),
        {"Content-Type": "application/xml"},
        "Café € 1",
    ),
    (
        "text/xml without a charset is ASCII, then the declaration",
        feed("Café", "iso-8859-1").encode("latin-1"),
        {"Content-Type": "text/xml"},
        "Café",
    ),
    (
        "a UTF-16 BOM",
        codecs.BOM_UTF16_LE + feed(declaration="utf-16").encode("utf-16-le"),
        {"Content-Type": "application/xml"},
        TITLE,
    ),
    (
        "UTF-16 without a BOM, declared",
        feed(declaration="utf-16").encode("utf-16-be"),
        {"Content-Type": "application/xml"},
        TITLE,
    ),
    (
        "a UTF-8 BOM and no declaration",
        codecs.BOM_UTF8 + feed(declaration=None).encode(),
        {"Content-Type": "text/xml"},
        TITLE,
    ),
    (
        "a UTF-16 declaration over UTF-8 bytes is read as UTF-8",
        feed(declaration="utf-16").encode(),
        {"Content-Type": "application/rss+xml"},
        TITLE,
    ),
    (
        "whitespace before the declaration",
        ("\n\n " + feed()).encode(),
        {"Content-Type": "application/xml"},
        TITLE,
    ),
    (
        "served as HTML",
        feed().encode(),
        {"Content-Type": "text/html; charset=utf-8"},
        TITLE,
    ),
]


@pytest.mark.parametrize(("case", "body", "headers", "read"), CASES, ids=[c[0] for c in CASES])
def test_a_feed_is_decoded_as_a_browser_would(
    case: str, body: bytes, headers: dict[str, str], read: str
) -> None:
    assert title(body, headers) == read


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({}, b"<rss/>", "application/xml"),
        ({"content-type": " "}, b"<rss/>", "application/xml"),
        ({"CONTENT-TYPE": "text/xml"}, b"<rss/>", "text/xml"),
        ({}, b'<?xml version="1.0" encoding="UTF-16"?>', "application/xml; charset=utf-8"),
        (
            {"Content-Type": "text/xml; charset=latin1"},
            b'<?xml version="1.0" encoding="utf-16"?>',
            "text/xml; charset=latin1",
        ),
    ],
)
def test_the_content_type_a_document_is_read_with(
    headers: dict[str, str], body: bytes, expected: str
) -> None:
    assert content_type(headers, body) == expected
