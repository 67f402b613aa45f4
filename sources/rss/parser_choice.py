"""Which reader a feed document gets: the fast one (sources.rss.fast_reader) only where it is
known to give what feedparser gives, feedparser for everything else.

The rule, measured against feedparser on the real-feed corpus and on generated feeds
(tests/component/test_fast_reader_differential.py): an RSS document (root `<rss>` or
`<rdf:RDF>`) that is well-formed as far as characters and references go, has no xml:base
and no DOCTYPE, declares only the namespaces below and uses none of their elements that
feedparser folds into an entry's title, text or author. Atom is left to feedparser:
feedparser-rs calls an untyped Atom title or summary HTML, and gives an entry its feed's
author. An unknown namespace is left to feedparser too: its elements may be folded in next.

Pure: the UTF-8 document (as feedparser decodes it) in, a yes or no out. A few substring
and regular expression scans, a small fraction of either parse.
"""

from __future__ import annotations

import re

# namespaces whose elements both readers treat alike (or both ignore), each with the elements
# that feedparser alone folds into an entry's title, text or author (`itunes:summary` becomes
# the summary or the content, depending on where it stands), which keep a document from the
# fast path
FAST_NAMESPACES: dict[str, frozenset[bytes]] = {
    "http://purl.org/rss/1.0/": frozenset(),  # RSS 1.0's own elements
    "http://my.netscape.com/rdf/simple/0.9/": frozenset(),  # RSS 0.90's
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#": frozenset(),
    "http://purl.org/dc/elements/1.1/": frozenset({b"title", b"description", b"author"}),
    "http://purl.org/rss/1.0/modules/content/": frozenset(),
    "http://purl.org/rss/1.0/modules/syndication/": frozenset(),
    "http://purl.org/rss/1.0/modules/slash/": frozenset(),
    "http://purl.org/rss/1.0/modules/taxonomy/": frozenset(),
    "http://wellformedweb.org/CommentAPI/": frozenset(),
    "http://webns.net/mvcb/": frozenset(),
    "http://rssnamespace.org/feedburner/ext/1.0": frozenset(),
    "http://www.w3.org/2005/Atom": frozenset(  # in RSS: atom:link rel="self" and the like
        {b"title", b"summary", b"content", b"id", b"updated", b"published", b"author"}
    ),
    "http://www.itunes.com/dtds/podcast-1.0.dtd": frozenset({b"summary", b"author", b"name"}),
    "http://search.yahoo.com/mrss/": frozenset({b"title", b"description"}),
}
# elements of those namespaces that feedparser also folds into an entry, but only in one: a
# channel's <atom:link rel="self"> is harmless, an item's may be its link or its replies
_FOLDED_IN_ITEMS = {"http://www.w3.org/2005/Atom": (b"link",)}
_ROOT = re.compile(rb"<([A-Za-z_][\w.:-]*)")
_PREFIXED = re.compile(rb"<([\w.-]+):([\w.-]+)")  # a prefixed element: (prefix, name)
_NAMESPACE = re.compile(rb"""xmlns(:[\w.-]+)?\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_RSS_ROOTS = (b"rss", b"rdf:RDF")
# an xml:base (feedparser-rs takes the channel's link for the base where none is stated, and
# cannot say which it is), a DOCTYPE (feedparser rewrites it before parsing)
_FEEDPARSER_FEATURES = (b"xml:base", b"<!DOCTYPE")
# two elements for one field: feedparser keeps the later of <author> and <dc:creator>, and
# <pubDate> over <dc:date>; feedparser-rs prefers dc:creator, and dc:date to a <pubDate> it
# cannot read itself
_EITHER_OR = ((b"<author", b":creator>"), (b"<pubDate", b":date>"))
_CDATA = re.compile(rb"<!\[CDATA\[.*?\]\]>", re.DOTALL)
# an ampersand that starts no reference XML defines by itself (`&nbsp;`, a bare `&`): expat
# stops there and feedparser reads the document with its lenient parser instead, which
# feedparser-rs does not imitate
_NOT_XML_REFERENCE = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)")
# a character XML forbids, written as itself (a C0 control but tab and newlines; U+FFFE and
# U+FFFF in UTF-8) or as a reference, stops expat the same way. bytes.translate deleting every
# other byte finds the controls ten times faster than a regular expression.
_C0_CONTROLS = bytes(range(0x09)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))
_NOT_C0_CONTROLS = bytes(byte for byte in range(256) if byte not in _C0_CONTROLS)
_NONCHARACTER = re.compile(rb"\xef\xbf[\xbe\xbf]")
_NUMERIC_REFERENCE = re.compile(rb"&#(?:x([0-9a-fA-F]+)|([0-9]+));")


def takes_fast_path(decoded: bytes) -> bool:
    """Whether the fast reader may read this UTF-8 document in feedparser's place."""
    root = _ROOT.search(decoded)
    if root is None or root.group(1) not in _RSS_ROOTS:
        return False
    if any(feature in decoded for feature in _FEEDPARSER_FEATURES):
        return False
    if any(a in decoded and b in decoded for a, b in _EITHER_OR):
        return False
    return _xml_characters_only(decoded) and _fast_namespaces(decoded)


def _xml_characters_only(decoded: bytes) -> bool:
    """Whether expat would read every character and reference of the document, as far as
    characters go: feedparser's strict parse does not stop on one."""
    if decoded.translate(None, _NOT_C0_CONTROLS):
        return False
    if b"\xef\xbf" in decoded and _NONCHARACTER.search(decoded):
        return False
    if b"&" not in decoded:
        return True
    if _NOT_XML_REFERENCE.search(decoded) and _NOT_XML_REFERENCE.search(_CDATA.sub(b"", decoded)):
        return False
    return all(
        _is_xml_character(int(hexadecimal, 16) if hexadecimal else int(decimal))
        for hexadecimal, decimal in set(_NUMERIC_REFERENCE.findall(decoded))
    )


def _is_xml_character(code: int) -> bool:
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or (0x10000 <= code <= 0x10FFFF)
    )


def _fast_namespaces(decoded: bytes) -> bool:
    """Whether every namespace the document declares is one of FAST_NAMESPACES, and none of
    their elements that feedparser folds into an entry is used (one scan lists the prefixed
    elements of the document, one those of its items)."""
    declared = _NAMESPACE.findall(decoded)
    if not declared:
        return True
    opened = set(_PREFIXED.findall(decoded))
    first_item = decoded.find(b"<item")
    in_items = set(_PREFIXED.findall(decoded, first_item)) if first_item >= 0 else set()
    for prefix, double, single in declared:
        uri = (double or single).decode("utf-8", "replace")
        folded = FAST_NAMESPACES.get(uri)
        if folded is None or (folded and not prefix):
            return False
        name = prefix[1:]
        if any((name, element) in opened for element in folded):
            return False
        if any((name, element) in in_items for element in _FOLDED_IN_ITEMS.get(uri, ())):
            return False
    return True
