"""OPML, the feed readers' subscription lists: read as Miniflux, FreshRSS, Feedly, Inoreader,
NetNewsWire and Tiny Tiny RSS export them, and written back as OPML 2.0.

Pure: bytes in, feeds out, and back. The XML is parsed by defusedxml, so a document that
declares entities (the "billion laughs") or points outside itself is refused, not expanded.
An outline with an `xmlUrl` is a feed; one without is a category around the outlines in it
(nested categories make a path). An outline with attributes in NAMESPACE is a crawler, as an
export writes it: its name, the feeds in it, and what else defines it (keywords, item limit,
schedule...), which other readers ignore. Errors name the outline: `body.outline[2].outline[5]`,
or its attribute: `body.outline[0].blackwidow:itemLimit`.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import urlsplit

import defusedxml.ElementTree
from defusedxml import DefusedXmlException

# what XML 1.0 cannot carry, not even as a character reference: the C0 controls but tab,
# newline and carriage return, lone surrogates, U+FFFE and U+FFFF. A crawler's name holds none
# (blackwidow.name_rule); a feed's title and a keyword may.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MAX_DEPTH = 16  # nested categories; deeper is not a reader's export
# a name, never fetched: the version changes only if a setting's meaning does
NAMESPACE = "urn:blackwidow:opml:1"
PREFIX = "blackwidow"
# a crawler outline's attributes in NAMESPACE -> the crawler create body's field and how its
# value is written: JSON, a whole number, true/false, or text
SETTINGS = {
    "keywords": ("keywords", "json"),
    "urlKeys": ("url_keys", "json"),
    "itemLimit": ("item_limit", "integer"),
    "retentionDays": ("retention_days", "integer"),
    "recollectAfter": ("recollect_after", "integer"),
    "schedule": ("schedule", "json"),
    "enabled": ("enabled", "boolean"),
    "priority": ("priority", "text"),
}
_WHOLE = re.compile(r"\s*-?\d{1,18}\s*")
ET.register_namespace(PREFIX, NAMESPACE)


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
class CrawlerOutline:
    """A crawler as an export writes it: `settings` by the create body's names (`item_limit`),
    those the outline gives; its feeds' categories are empty, it is no category."""

    name: str
    feeds: list[Feed]
    settings: dict[str, Any]
    where: str


@dataclass(frozen=True)
class Subscriptions:
    title: str | None
    feeds: list[Feed]  # outside any crawler outline
    crawlers: list[CrawlerOutline] = field(default_factory=list)


def attribute(setting: str) -> str:
    """The attribute a crawler outline writes a setting in, as errors name it."""
    return next(f"{PREFIX}:{name}" for name, (key, _) in SETTINGS.items() if key == setting)


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
    found = list(_outlines(body, "body", ()))
    feeds = [outline for outline in found if isinstance(outline, Feed)]
    made = [outline for outline in found if isinstance(outline, CrawlerOutline)]
    if not feeds and not made:
        raise OpmlError("body", "no feeds (no outline has an xmlUrl)")
    title = (root.findtext("head/title") or "").strip() or None
    return Subscriptions(title, feeds, made)


def _outlines(
    parent: ET.Element, where: str, path: tuple[str, ...]
) -> Iterator[Feed | CrawlerOutline]:
    if len(path) > MAX_DEPTH:
        raise OpmlError(where, f"categories nested deeper than {MAX_DEPTH}")
    for index, outline in enumerate(parent.findall("outline")):
        here = f"{where}.outline[{index}]"
        name = _name(outline)
        if _settings(outline, here):
            yield _crawler(outline, here, name)
        elif _attribute(outline, "xmlurl") is None:
            yield from _outlines(outline, here, (*path, name or "Unnamed"))
        else:
            yield _feed(outline, here, name, path)


def _feed(outline: ET.Element, where: str, name: str, path: tuple[str, ...]) -> Feed:
    url = (_attribute(outline, "xmlurl") or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OpmlError(where, f"xmlUrl: not an http(s) URL: {url[:200]!r}")
    return Feed(url, name or url, path, where)


def _crawler(outline: ET.Element, where: str, name: str) -> CrawlerOutline:
    """A crawler's outline: its settings, and its feeds, the outlines in it, each one a feed."""
    if _attribute(outline, "xmlurl") is not None:
        raise OpmlError(where, f"{PREFIX} attributes belong on the outline around the feeds")
    feeds = []
    for index, inner in enumerate(outline.findall("outline")):
        here = f"{where}.outline[{index}]"
        if _attribute(inner, "xmlurl") is None:
            raise OpmlError(here, "a crawler's outline holds feeds only (outlines with xmlUrl)")
        if _settings(inner, here):
            raise OpmlError(here, f"{PREFIX} attributes on a feed inside a crawler's outline")
        feeds.append(_feed(inner, here, _name(inner), ()))
    return CrawlerOutline(name, feeds, _settings(outline, where), where)


def _settings(outline: ET.Element, where: str) -> dict[str, Any]:
    """The outline's settings in NAMESPACE, decoded; an unknown attribute there is refused,
    so a misspelt one does not quietly leave its setting out."""
    settings: dict[str, Any] = {}
    for key, value in outline.attrib.items():
        if not key.startswith(f"{{{NAMESPACE}}}"):
            continue
        name = key.split("}", 1)[1]
        if name not in SETTINGS:
            known = ", ".join(SETTINGS)
            raise OpmlError(f"{where}.{PREFIX}:{name}", f"unknown attribute, expected {known}")
        setting, kind = SETTINGS[name]
        settings[setting] = _decoded(value, kind, f"{where}.{PREFIX}:{name}")
    return settings


def _decoded(value: str, kind: str, where: str) -> Any:
    if kind == "json":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: nested past the decoder's depth
            raise OpmlError(where, f"not JSON: {value[:200]!r}") from None
    if kind == "integer":
        if not _WHOLE.fullmatch(value):
            raise OpmlError(where, f"not a whole number: {value[:200]!r}")
        return int(value)
    if kind == "boolean":
        if value.strip() not in ("true", "false"):
            raise OpmlError(where, f"expected true or false, not {value[:200]!r}")
        return value.strip() == "true"
    return value


def _encoded(value: Any, kind: str) -> str:
    if kind == "json":  # a keyword may hold what XML cannot carry: JSON escapes it
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return _NOT_XML.sub(lambda found: f"\\u{ord(found[0]):04x}", text)
    if kind == "boolean":
        return "true" if value else "false"
    return str(value)


def _attribute(outline: ET.Element, lower: str) -> str | None:
    """An attribute whatever its case: readers write xmlUrl, some xmlurl."""
    return next((value for key, value in outline.attrib.items() if key.lower() == lower), None)


def _name(outline: ET.Element) -> str:
    return (_attribute(outline, "text") or _attribute(outline, "title") or "").strip()


@dataclass(frozen=True)
class Written:
    """A crawler to write: its name, its feeds as (URL, title), its settings by the create
    body's names (those of SETTINGS; None is left out: the create's default)."""

    name: str
    feeds: Sequence[tuple[str, str]]
    settings: Mapping[str, Any]


def write(title: str, crawlers: Sequence[Written]) -> bytes:
    """An OPML 2.0 document: an outline per crawler, its settings as attributes in NAMESPACE,
    holding its feeds' outlines; a reader that knows nothing of NAMESPACE sees a category."""
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = title
    ET.SubElement(head, "dateCreated").text = formatdate(usegmt=True)
    body = ET.SubElement(root, "body")
    for crawler in crawlers:
        category = ET.SubElement(body, "outline", text=crawler.name, title=crawler.name)
        for name, (setting, kind) in SETTINGS.items():
            value = crawler.settings.get(setting)
            if value is not None:
                category.set(f"{{{NAMESPACE}}}{name}", _encoded(value, kind))
        for url, read_title in crawler.feeds:
            feed_title = _NOT_XML.sub(" ", read_title)  # as a feed gave it: anything at all
            ET.SubElement(
                category, "outline", type="rss", text=feed_title, title=feed_title, xmlUrl=url
            )
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
