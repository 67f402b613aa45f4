"""The HTML of feed entries, two ways: its plain text (for titles, text and keyword filters) and
a sanitised copy of the markup (for readers that show the entry as published).

Pure: values as feedparser gives them (its own sanitiser is off) in, strings out.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import nh3

_NOT_TEXT = ("script", "style", "applet")
_BLOCK_TAGS = {"p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"}
_URL_ATTRIBUTES = {"href", "src", "cite", "longdesc"}
_WEB = ("http", "https")


class _TextExtractor(HTMLParser):
    """Collects the text of an HTML fragment; script, style and applet contents are not text
    (the elements whose contents feedparser's sanitiser drops, which this replaces)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _NOT_TEXT:
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _NOT_TEXT and self._skipping:
            self._skipping -= 1
        elif tag in _BLOCK_TAGS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _is_html(detail: Any) -> bool:
    return "html" in (detail.get("type") or "")


def plain_text(detail: Any) -> str | None:
    """The text of a feedparser value; HTML is reduced to its words, plain text is kept as is."""
    if not detail or not detail.get("value"):
        return None
    value = detail["value"]
    if _is_html(detail):
        extractor = _TextExtractor()
        extractor.feed(value)
        extractor.close()
        value = "".join(extractor.parts)
    return " ".join(value.split()) or None


def _base_url(detail: Any, entry_url: str | None, feed_url: str) -> str:
    """What relative links inside an entry's HTML are relative to.

    An xml:base the feed states wins (the publisher said so). Otherwise the entry's own page:
    an entry's HTML is a copy of that page's body, written with links relative to it (what
    Miniflux does too; feedparser would use the feed's address, which breaks the common
    `<img src="images/x.png">` of a post in a sub-directory). The feed's URL is the last resort.
    """
    stated = urljoin(feed_url, (detail.get("base") or "").strip())
    if stated != feed_url and urlsplit(stated).scheme in _WEB:
        return stated
    return entry_url or feed_url


def _absolute_links(base: str) -> Any:
    """An nh3 attribute filter that makes relative URLs absolute against `base`.

    ammonia, under nh3, can rewrite relative URLs only from a base fixed when the cleaner is
    built, which nh3 does not expose; its attribute filter runs after the scheme check, so a
    value it sees is either relative or of an allowed scheme, and joining a relative one to
    a web base gives a web URL.
    """

    def absolute(tag: str, attribute: str, value: str) -> str:
        if attribute in _URL_ATTRIBUTES and not urlsplit(value).scheme:
            return urljoin(base, value)
        return value

    return absolute


def sanitised_html(detail: Any, entry_url: str | None, feed_url: str) -> str | None:
    """The entry's HTML with scripts, styles, event handlers and unsafe URLs removed (nh3's
    allow-list) and its links made absolute; None for plain text and empty values."""
    if not detail or not detail.get("value") or not _is_html(detail):
        return None
    base = _base_url(detail, entry_url, feed_url)
    return nh3.clean(detail["value"], attribute_filter=_absolute_links(base)).strip() or None
