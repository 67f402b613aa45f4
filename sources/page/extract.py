"""HTML pages read by configured paths: the items, their fields and the next page's link.

Pure. Paths are XPath 1.0, or CSS selectors (with `::attr(name)` or `::text` at the end to
take an attribute or the text) turned into XPath once. lxml's HTML parser reads broken
markup as browsers do and never fetches anything (no network, no external entities).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import lxml.etree
import lxml.html
from cssselect import HTMLTranslator, SelectorError

from sources.records import Page, absolute_url, item_from_record

SOURCE = "page"
_CSS_TAIL = re.compile(r"::(?:attr\(\s*([\w:-]+)\s*\)|(text))\s*\Z")


class PagePathError(ValueError):
    """A path that is not valid XPath or CSS; str() says why."""


def compiled(path: str, selector: str) -> lxml.etree.XPath:
    """The path as an XPath, tried once; `selector` is "xpath" or "css"."""
    kind = "CSS selector" if selector == "css" else "XPath"
    text = _css_as_xpath(path) if selector == "css" else path
    try:
        xpath = lxml.etree.XPath(text, smart_strings=False)
        xpath(lxml.html.fromstring("<p>sample</p>"))  # finds unknown functions and prefixes
    except lxml.etree.XPathEvalError as error:  # an unknown function or namespace prefix
        raise PagePathError(f"not a usable {kind} ({error})") from None
    except (lxml.etree.XPathError, ValueError) as error:  # a NUL or a lone surrogate, too
        raise PagePathError(f"not a valid {kind} ({error})") from None
    return xpath


def _css_as_xpath(path: str) -> str:
    tail = _CSS_TAIL.search(path)
    selector = path[: tail.start()].strip() if tail else path
    try:  # `::attr(name)` alone is the item's own attribute
        xpath = HTMLTranslator().css_to_xpath(selector) if selector or not tail else "self::*"
    except (SelectorError, ValueError) as error:  # an escape of no character, too
        raise PagePathError(f"not a valid CSS selector ({error})") from None
    if tail is None:
        return xpath
    return f"({xpath})/@{tail.group(1)}" if tail.group(1) else f"({xpath})/text()"


@dataclass(frozen=True)
class PagePaths:
    """A page query's paths, compiled once per data source."""

    items: lxml.etree.XPath
    fields: Mapping[str, lxml.etree.XPath]
    next: lxml.etree.XPath | None

    @classmethod
    def of(cls, query: Mapping[str, Any]) -> PagePaths:
        selector = query["selector"]
        return cls(
            items=compiled(query["items"], selector),
            fields={name: compiled(path, selector) for name, path in query["fields"].items()},
            next=compiled(query["next"], selector) if query.get("next") else None,
        )


def _texts(found: Any) -> list[str]:
    """What a path found, as text: an element's text content, an attribute's value, a number."""
    if isinstance(found, bool):
        return ["true" if found else "false"]
    if isinstance(found, float):
        return [f"{found:g}"]
    if isinstance(found, str):
        return [found]
    texts = [_text_of(node) for node in (found if isinstance(found, list) else [found])]
    return [text for text in texts if text.strip()]


def _text_of(node: Any) -> str:
    if isinstance(node, lxml.etree._Element):
        return lxml.etree.tostring(node, method="text", encoding="unicode", with_tail=False)
    return str(node)


def _value(path: lxml.etree.XPath, node: Any, name: str) -> str | None:
    """A field's value: the first match; for `text`, every match joined."""
    texts = _texts(path(node))
    if not texts:
        return None
    return " ".join(texts) if name == "text" else texts[0]


def document(body: bytes, url: str) -> Any | None:
    """The parsed page; None when it holds nothing at all."""
    try:
        return lxml.html.document_fromstring(body, base_url=url)
    except (lxml.etree.ParserError, ValueError):  # "Document is empty"
        return None


def _base_url(root: Any, url: str) -> str:
    """What the page's links are relative to: its `<base href>`, as browsers read it, else
    the URL it was fetched from."""
    base = root.find(".//base[@href]")
    if base is None:
        return url
    return absolute_url(base.get("href"), url) or url


def extract_page(paths: PagePaths, body: bytes, url: str, fetched_at: datetime) -> Page:
    """The items of one HTML page, in page order, and the next page's URL (absolute)."""
    root = document(body, url)
    if root is None:
        return Page([], None)
    url = _base_url(root, url)
    found = paths.items(root)
    items = []
    for node in found if isinstance(found, list) else []:  # a count() or string() finds none
        if not isinstance(node, lxml.etree._Element):
            continue  # an item path that matched text or an attribute finds no item
        record = {name: _value(path, node, name) for name, path in paths.fields.items()}
        item = item_from_record(SOURCE, record, url, fetched_at)
        if item is not None:
            items.append(item)
    next_url = _value(paths.next, root, "next") if paths.next is not None else None
    return Page(items, absolute_url(next_url, url))
