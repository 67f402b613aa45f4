"""OPML, the feed readers' subscription lists: read as Miniflux, FreshRSS, Feedly, Inoreader,
NetNewsWire and Tiny Tiny RSS export them, and written back as OPML 2.0.

Pure: bytes in, feeds out, and back. The XML is parsed by defusedxml, so a document that
declares entities (the "billion laughs") or points outside itself is refused, not expanded.
An outline with an `xmlUrl` is a feed; one without is a category around the outlines in it
(nested categories make a path). Errors name the outline: `body.outline[2].outline[5]`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from email.utils import formatdate
from urllib.parse import urlsplit

import defusedxml.ElementTree
from defusedxml import DefusedXmlException

MAX_DEPTH = 16  # nested categories; deeper is not a reader's export


class OpmlError(ValueError):
    """A document that is not a usable OPML subscription list; `where` names the part."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


@dataclass(frozen=True)
class Feed:
    url: str
    name: str
    categories: tuple[str, ...]  # the enclosing outlines' names, outermost first
    where: str  # the outline's path in the document, for errors found later


@dataclass(frozen=True)
class Subscriptions:
    title: str | None
    feeds: list[Feed]


def read(document: bytes) -> Subscriptions:
    """The feeds of an OPML document, in document order (a URL listed twice is there twice:
    which copy counts is the importer's choice)."""
    try:
        root = defusedxml.ElementTree.fromstring(document)
    except DefusedXmlException as error:
        raise OpmlError("document", f"refused: {type(error).__name__}") from None
    except ET.ParseError as error:
        raise OpmlError("document", f"not XML: {error}") from None
    if root.tag != "opml":
        raise OpmlError("document", f"not OPML: the root element is <{root.tag}>")
    body = root.find("body")
    if body is None:
        raise OpmlError("body", "missing")
    feeds = list(_feeds(body, "body", ()))
    if not feeds:
        raise OpmlError("body", "no feeds (no outline has an xmlUrl)")
    title = (root.findtext("head/title") or "").strip() or None
    return Subscriptions(title, feeds)


def _feeds(parent: ET.Element, where: str, path: tuple[str, ...]) -> Iterator[Feed]:
    if len(path) > MAX_DEPTH:
        raise OpmlError(where, f"categories nested deeper than {MAX_DEPTH}")
    for index, outline in enumerate(parent.findall("outline")):
        here = f"{where}.outline[{index}]"
        name = _name(outline)
        url = _attribute(outline, "xmlurl")
        if url is None:
            yield from _feeds(outline, here, (*path, name or "Unnamed"))
            continue
        url = url.strip()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise OpmlError(here, f"xmlUrl: not an http(s) URL: {url[:200]!r}")
        yield Feed(url, name or url, path, here)


def _attribute(outline: ET.Element, lower: str) -> str | None:
    """An attribute whatever its case: readers write xmlUrl, some xmlurl."""
    return next((value for key, value in outline.attrib.items() if key.lower() == lower), None)


def _name(outline: ET.Element) -> str:
    return (_attribute(outline, "text") or _attribute(outline, "title") or "").strip()


def write(title: str, groups: Sequence[tuple[str, Sequence[str]]]) -> bytes:
    """An OPML 2.0 document: a category outline per group, holding its feed URLs."""
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = title
    ET.SubElement(head, "dateCreated").text = formatdate(usegmt=True)
    body = ET.SubElement(root, "body")
    for name, urls in groups:
        category = ET.SubElement(body, "outline", text=name, title=name)
        for url in urls:
            ET.SubElement(category, "outline", type="rss", text=url, title=url, xmlUrl=url)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
