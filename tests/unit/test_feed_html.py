"""Items keep their entry's HTML, sanitised, with links made absolute; plain text has none."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sources.rss.parse import parse_feed

FEED_URL = "https://feeds.example/dir/feed.xml"
FETCHED_AT = datetime(2024, 5, 1, tzinfo=UTC)
XML = {"Content-Type": "application/xml"}


def escaped(html: str) -> str:
    return html.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def rss_item(html: str, link: str = "https://site.example/posts/2024/one.html") -> bytes:
    return (
        '<rss version="2.0"><channel><title>t</title><item><guid>g</guid>'
        f"<link>{link}</link><description>{escaped(html)}</description></item></channel></rss>"
    ).encode()


def only_item_html(body: bytes) -> str | None:
    [item] = parse_feed(body, FEED_URL, FETCHED_AT, XML)[0]
    return item.html


@pytest.mark.parametrize(
    ("html", "kept"),
    [
        ("<p>Hello <b>world</b></p>", "<p>Hello <b>world</b></p>"),
        ("before<script>alert(1)</script>after", "beforeafter"),
        ("<p onclick='evil()'>x</p>", "<p>x</p>"),
        ("a<style>p { color: red }</style>b", "ab"),
        ("<iframe src='https://x.example'></iframe>kept", "kept"),
        ("<a href='javascript:alert(1)'>j</a>", '<a rel="noopener noreferrer">j</a>'),
        (
            "<a href='https://other.example/x'>abs</a>",
            '<a href="https://other.example/x" rel="noopener noreferrer">abs</a>',
        ),
        (
            "<a href='/about'>root</a> <img src='img/a.png'>",
            '<a href="https://site.example/about" rel="noopener noreferrer">root</a>'
            ' <img src="https://site.example/posts/2024/img/a.png">',
        ),
        ("<p>caf&eacute; &amp; more</p>", "<p>café &amp; more</p>"),
    ],
)
def test_html_is_sanitised_and_its_links_resolved_against_the_entry(html: str, kept: str) -> None:
    assert only_item_html(rss_item(html)) == kept


def test_without_an_entry_link_links_resolve_against_the_feed() -> None:
    body = rss_item("<a href='next.html'>n</a>", link="")

    assert only_item_html(body) == (
        '<a href="https://feeds.example/dir/next.html" rel="noopener noreferrer">n</a>'
    )


def atom(content: str, kind: str, base: str = "") -> bytes:
    return (
        '<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><id>f</id>'
        f'<entry {base}><id>e</id><title>t</title><link href="https://site.example/e"/>'
        f'<content type="{kind}">{content}</content></entry></feed>'
    ).encode()


def test_an_xml_base_the_feed_states_wins_over_the_entry_link() -> None:
    body = atom(escaped("<img src='p.png'>"), "html", 'xml:base="https://cdn.example/media/"')

    assert only_item_html(body) == '<img src="https://cdn.example/media/p.png">'


def test_xhtml_content_is_kept_too() -> None:
    body = atom('<div xmlns="http://www.w3.org/1999/xhtml"><p>Hi <em>x</em></p></div>', "xhtml")

    assert only_item_html(body) == "<p>Hi <em>x</em></p>"  # feedparser drops the wrapper div


def test_plain_text_entries_have_no_html() -> None:
    [item] = parse_feed(atom("Just &lt;text&gt;", "text"), FEED_URL, FETCHED_AT, XML)[0]

    assert (item.text, item.html) == ("Just <text>", None)


def test_content_is_preferred_to_the_summary() -> None:
    body = (
        '<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/">'
        "<channel><title>t</title><item><guid>g</guid><description>short</description>"
        f"<content:encoded>{escaped('<p>full</p>')}</content:encoded></item></channel></rss>"
    ).encode()

    assert only_item_html(body) == "<p>full</p>"
