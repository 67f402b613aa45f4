"""parse_feed over the sample feeds in tests/data: what each one yields, or why it is refused."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sources.rss.parse import FeedError, parse_feed
from sources.url_keys import resolved_url

DATA = Path(__file__).resolve().parent.parent / "data"
FEED_URL = "https://feeds.example/dir/feed.xml"
FETCHED_AT = datetime(2024, 5, 1, tzinfo=UTC)
XML = {"Content-Type": "application/xml"}


def link_id(url: str) -> str:
    return "sha1:" + hashlib.sha1(resolved_url(url).encode()).hexdigest()


# (file, expected ttl, expected items as (id, url, title, text, author, published_at))
CASES = [
    (
        "rss_guid.xml",
        None,
        [
            (
                "news-1001",
                "https://news.example/2024/harbour",
                "Harbour reopens",
                "The harbour reopened on Monday.",
                "editor@news.example (Ed Itor)",
                datetime(2024, 1, 1, 10, 0, tzinfo=UTC),
            ),
            (
                "https://news.example/2024/bridge",
                "https://news.example/2024/bridge",
                "Bridge closed",
                "Repairs start next week.",
                None,
                datetime(2024, 1, 2, 8, 30, tzinfo=UTC),
            ),
        ],
    ),
    (
        "rss_no_guid.xml",
        None,
        [
            (
                link_id("https://links.example/posts/1"),
                "https://Links.Example:443/posts/1#comments",
                "Absolute link",
                None,
                None,
                None,
            ),
            (
                link_id("https://feeds.example/posts/2"),
                "https://feeds.example/posts/2",
                "Relative link",
                None,
                None,
                None,
            ),
        ],
    ),
    (
        "atom.xml",
        None,
        [
            (
                "urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a",
                "https://atom.example/tides",
                "Tides <rising>",
                "Full content wins.",
                "Ann Author",
                datetime(2024, 3, 1, 8, 0, tzinfo=UTC),
            ),
            (
                "tag:atom.example,2024:winds",
                "https://feeds.example/winds",
                "Winds <b> literal",
                "Only updated, no published.",
                None,
                datetime(2024, 3, 2, 0, 0, tzinfo=UTC),
            ),
        ],
    ),
    (
        "rss_ttl.xml",
        7200.0,
        [("slow-1", "https://slow.example/1", "Once in a while", None, None, None)],
    ),
    (  # truncated mid-item: feedparser's lenient reading still finds the entry
        "malformed.xml",
        None,
        # its guid is a permalink by default, so it is the link too; the title never closes
        [("broken-1", "https://feeds.example/dir/broken-1", None, None, None, None)],
    ),
    (
        "rss_html.xml",
        None,
        [
            (
                "html-1",
                "https://html.example/1",
                "Fish & chips",
                "Hot fish & chips Price: £5",
                None,
                None,
            ),
            ("html-2", "https://html.example/2", "Escaped markup", "Line one line two", None, None),
        ],
    ),
]


@pytest.mark.parametrize(("name", "ttl", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sample_feed_items(name: str, ttl: float | None, expected: list[tuple]) -> None:
    items, feed_ttl, _ = parse_feed((DATA / name).read_bytes(), FEED_URL, FETCHED_AT, XML)

    rows = [(i.id, i.url, i.title, i.text, i.author, i.published_at) for i in items]
    assert rows == expected
    assert feed_ttl == ttl


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_items_carry_source_and_fetch_time_and_no_crawler(name: str) -> None:
    items, _, _ = parse_feed((DATA / name).read_bytes(), FEED_URL, FETCHED_AT, XML)

    assert items
    for item in items:
        assert (item.source, item.fetched_at, item.crawler_id) == ("rss", FETCHED_AT, None)
        assert (item.conversation_id, item.in_reply_to) == (None, None)


REFUSED = [
    (b"", "not a feed"),
    (b'<?xml version="1.0"?><html><body>hi</body></html>', "not a feed"),
    (
        b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]>'
        b'<rss version="2.0"><channel><title>&b;</title></channel></rss>',
        "entities are not allowed in feeds",
    ),
    (
        b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<rss version="2.0"><channel><title>&x;</title></channel></rss>',
        "entities are not allowed in feeds",
    ),
    # Bytes that name a local file are a document like any other, never a path to open.
    (b"/etc/passwd", "not a feed"),
    (str(DATA / "rss_guid.xml").encode(), "not a feed"),
]


@pytest.mark.parametrize(("body", "reason"), REFUSED)
def test_refused_documents(body: bytes, reason: str) -> None:
    with pytest.raises(FeedError, match=reason):
        parse_feed(body, FEED_URL, FETCHED_AT, XML)


def test_a_dtd_without_entities_is_accepted() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"'
        b' "http://my.netscape.com/publish/formats/rss-0.91.dtd">'
        b'<rss version="0.91"><channel><title>old</title><link>https://old.example/</link>'
        b"<item><title>one</title><link>https://old.example/1</link></item></channel></rss>"
    )

    items, _, _ = parse_feed(body, FEED_URL, FETCHED_AT, XML)

    assert [item.url for item in items] == ["https://old.example/1"]


def test_an_empty_channel_is_a_feed_with_no_items() -> None:
    body = b'<rss version="2.0"><channel><title>quiet</title></channel></rss>'

    assert parse_feed(body, FEED_URL, FETCHED_AT, XML) == ([], None, "quiet")


@pytest.mark.parametrize(
    ("channel", "title"),
    [
        ("<title>  Sports\n &amp; more </title>", "Sports & more"),
        ("<title></title>", None),
        ("", None),
    ],
)
def test_a_feed_s_own_title_is_its_plain_text(channel: str, title: str | None) -> None:
    body = f'<rss version="2.0"><channel>{channel}<item><guid>a</guid></item></channel></rss>'

    assert parse_feed(body.encode(), FEED_URL, FETCHED_AT, XML).title == title


def test_an_html_atom_title_is_reduced_to_its_words() -> None:
    body = (
        b'<feed xmlns="http://www.w3.org/2005/Atom"><title type="html">'
        b"&lt;b&gt;Bold&lt;/b&gt; news</title><id>urn:x</id></feed>"
    )

    assert parse_feed(body, FEED_URL, FETCHED_AT, XML).title == "Bold news"


@pytest.mark.parametrize("ttl", ["0", "-5", "soon", "inf", "1.5"])
def test_a_nonsense_ttl_is_ignored(ttl: str) -> None:
    body = f'<rss version="2.0"><channel><title>t</title><ttl>{ttl}</ttl></channel></rss>'

    assert parse_feed(body.encode(), FEED_URL, FETCHED_AT, XML) == ([], None, "t")


def test_links_that_are_not_web_links_are_dropped() -> None:
    body = (
        b'<rss version="2.0"><channel><title>t</title>'
        b"<item><title>no id left</title><link>javascript:alert(1)</link></item>"
        b"<item><guid>kept</guid><link>file:///etc/passwd</link></item></channel></rss>"
    )

    items, _, _ = parse_feed(body, FEED_URL, FETCHED_AT, XML)

    assert [(item.id, item.url) for item in items] == [("kept", None)]


def test_threaded_entries_share_the_conversation_of_the_post_they_answer() -> None:
    items, _, _ = parse_feed((DATA / "atom_thread.xml").read_bytes(), FEED_URL, FETCHED_AT, XML)

    post, reply, alone = "tag:example.org,2024:post-1", "tag:example.org,2024:comment-1", None
    assert [(i.id, i.conversation_id, i.in_reply_to) for i in items] == [
        (post, post, None),
        (reply, post, post),
        ("tag:example.org,2024:post-2", alone, None),
    ]


@pytest.mark.parametrize(
    "thread_tag",
    [
        b"<comments>https://e.example/a#comments</comments>",
        b'<wfw:commentRss xmlns:wfw="http://wellformedweb.org/CommentAPI/">'
        b"https://e.example/a/feed</wfw:commentRss>",
    ],
)
def test_an_rss_item_with_comments_starts_a_conversation(thread_tag: bytes) -> None:
    body = (
        b'<rss version="2.0"><channel><title>t</title><item><guid>a</guid>'
        b"<link>https://e.example/a</link>" + thread_tag + b"</item></channel></rss>"
    )

    items, _, _ = parse_feed(body, FEED_URL, FETCHED_AT, XML)

    assert [(item.conversation_id, item.in_reply_to) for item in items] == [("a", None)]


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<p>Hello <b>world</b></p>", "Hello world"),
        ("<p>one</p><p>two</p>", "one two"),
        ("before<script>alert(1)</script>after", "beforeafter"),
        ("a<style>p { color: red }</style>b", "ab"),
        ("a<applet code='x'>no applet text</applet>b", "ab"),
        ("a<!-- a comment -->b", "ab"),
        ("<iframe src='https://x.example'></iframe>kept", "kept"),
        ("<a href='/relative' onclick='evil()'>link text</a>", "link text"),
        ("fish &amp; chips &lt;3", "fish & chips <3"),
    ],
)
def test_html_is_reduced_to_its_text_without_feedparser_sanitising(html: str, text: str) -> None:
    escaped = html.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    body = (
        '<rss version="2.0"><channel><title>t</title><item><guid>g</guid>'
        f"<title>t</title><description>{escaped}</description></item></channel></rss>"
    ).encode()

    [item] = parse_feed(body, FEED_URL, FETCHED_AT, XML)[0]

    assert item.text == text


def test_an_entry_known_from_the_last_document_is_that_item_again() -> None:
    body = (DATA / "rss_guid.xml").read_bytes()
    first, _, _ = parse_feed(body, FEED_URL, FETCHED_AT, XML)
    later = datetime(2024, 5, 2, tzinfo=UTC)
    known = {item.id: item for item in first[:1]}

    again, _, _ = parse_feed(body, FEED_URL, later, XML, known)

    assert [item.id for item in again] == [item.id for item in first]
    assert again[0] is first[0]  # not extracted anew: first seen at FETCHED_AT
    assert all(item.fetched_at == later for item in again[1:])
