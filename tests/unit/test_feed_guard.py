"""The entity guard: sloppy documents pass, every way of smuggling entity declarations is
refused, in any encoding, at a bounded cost in memory."""

from __future__ import annotations

import codecs
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sources.rss import feed_guard
from sources.rss.feed_guard import ENTITIES_REFUSED, refusal
from sources.rss.parse import FeedError, parse_feed

HOSTILE = Path(__file__).resolve().parent.parent / "data" / "feeds" / "hostile"
BOMBS = sorted(HOSTILE.glob("*.xml"))
# a bomb only where its declaration is honoured: see test_a_utf7_bomb_is_seen_only_once_decoded
UTF7_BOMB = HOSTILE / "billion-laughs-utf7.xml"
FETCHED_AT = datetime(2024, 5, 1, tzinfo=UTC)

ITEM = "<item><guid>1</guid><title>Fish &amp; chips</title><description>{}</description></item>"
RSS = '<rss version="2.0"><channel><title>t</title>' + ITEM + "</channel></rss>"


def rss(text: str = "plain", prefix: str = '<?xml version="1.0" encoding="utf-8"?>\n') -> str:
    return prefix + RSS.format(text)


SLOPPY_BUT_SAFE = [
    ("whitespace before the declaration", rss(prefix='\n  <?xml version="1.0"?>\n').encode()),
    ("a UTF-8 BOM", codecs.BOM_UTF8 + rss("café").encode()),
    (
        "a UTF-16 BOM",
        codecs.BOM_UTF16_LE + rss("café").replace("utf-8", "utf-16").encode("utf-16-le"),
    ),
    ("UTF-16 declared over UTF-8 bytes", rss("café").replace("utf-8", "utf-16").encode()),
    ("Latin-1 without a declaration", rss("café", prefix="").encode("latin-1")),
    ("a bare ampersand", rss("fish & chips").encode()),
    ("undefined HTML entities", rss("a&nbsp;b &mdash; c &hellip;").encode()),
    ("truncated", rss("cut here").encode()[:-40]),
    (
        "a DTD without entities",
        rss(prefix='<!DOCTYPE rss SYSTEM "http://x.example/rss.dtd">').encode(),
    ),
    ("an entity declaration quoted in CDATA, no DTD", rss("<![CDATA[<!ENTITY x 'y'>]]>").encode()),
    ("no XML at all", b"\x00\xff\xfe garbage"),
    ("empty", b""),
]


@pytest.mark.parametrize(("case", "body"), SLOPPY_BUT_SAFE, ids=[c[0] for c in SLOPPY_BUT_SAFE])
def test_sloppy_documents_are_not_the_guards_business(case: str, body: bytes) -> None:
    assert refusal(body, "application/xml") is None


SERVED_AS = ["application/xml", "text/xml", "application/rss+xml; charset=iso-8859-1", "text/html"]
# the UTF-7 bomb is one only when its declaration is read, i.e. as application/xml
SERVED_BOMBS = [
    (bomb, served_as)
    for bomb in BOMBS
    for served_as in SERVED_AS
    if bomb != UTF7_BOMB or served_as == "application/xml"
]


@pytest.mark.parametrize(
    ("bomb", "content_type"), SERVED_BOMBS, ids=[f"{b.name}-{t}" for b, t in SERVED_BOMBS]
)
def test_every_hostile_document_is_refused_whatever_it_is_served_as(
    bomb: Path, content_type: str
) -> None:
    assert refusal(bomb.read_bytes(), content_type) == ENTITIES_REFUSED


def test_the_hostile_collection_covers_the_encodings_and_positions() -> None:
    names = {path.name for path in BOMBS}
    assert {
        "billion-laughs-whitespace-before-declaration.xml",
        "billion-laughs-declared-utf16.xml",
        "billion-laughs-utf16le-whitespace-no-bom.xml",
        "billion-laughs-utf7.xml",
        "quadratic-blowup.xml",
        "entity-before-doctype.xml",
    } <= names


def test_a_utf7_bomb_is_seen_only_once_decoded() -> None:
    """Its bytes hold neither keyword, so the decoded view is what refuses it. Served as
    text/xml, it is read as ASCII (RFC 3023, as feedparser does): its `+ADwAIQ-` stays text,
    there is nothing to expand, and nothing is refused."""
    body = UTF7_BOMB.read_bytes()

    assert b"<!ENTITY" not in body and b"<!DOCTYPE" not in body
    assert refusal(body, "application/xml") == ENTITIES_REFUSED
    assert refusal(body, "text/xml") is None


def test_a_document_too_large_once_decoded_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feed_guard, "MAX_DECODED_BYTES", 1000)
    latin1 = rss("é" * 600, prefix="").encode("latin-1")  # under 1000 bytes, over once UTF-8

    assert len(latin1) < 1000
    assert "once decoded" in (refusal(latin1, "text/xml; charset=iso-8859-1") or "")
    assert "larger than 1000 bytes" in (refusal(b" " * 1001, "application/xml") or "")


@pytest.mark.parametrize(
    "name", ["billion-laughs.xml", "billion-laughs-utf16le-bom.xml", "quadratic-blowup.xml"]
)
def test_a_bomb_through_parse_feed_is_refused_in_bounded_memory(name: str) -> None:
    """Each of these expands to a gigabyte or more; refusing it costs a few copies of it."""
    body = (HOSTILE / name).read_bytes()
    tracemalloc.start()
    try:
        with pytest.raises(FeedError, match=ENTITIES_REFUSED):
            parse_feed(body, "https://bomb.example/feed", FETCHED_AT, {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 16 * 1024 * 1024


def test_an_external_dtd_passes_the_guard_and_is_never_read(tmp_path: Path) -> None:
    """Neither feedparser's expat (external entities off) nor its lenient parser loads a DTD,
    so a DOCTYPE naming one may pass: what it declares never reaches the items."""
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY secret "leaked">')
    body = rss("&secret;", prefix=f'<!DOCTYPE rss SYSTEM "{dtd.as_uri()}">').encode()

    items, _, _ = parse_feed(body, "https://x.example/feed", FETCHED_AT, {})

    assert [item.id for item in items] == ["1"]
    assert "leaked" not in str(items)
