"""Entity guard for feed documents: refuses what a parser could expand or fetch, never what is
merely ill-formed.

Pure: bytes and headers in, a reason to refuse (or None) out. Whether the document is a feed
at all is feedparser's lenient call, made after this.

What feedparser does on its own, and why that is not enough: it decodes the document to UTF-8
(HTTP charset, BOM, XML declaration, then fallbacks), strips entity declarations from the
prolog and keeps those whose value holds no reference (no billion laughs), then parses with
expat (no external entities, no external DTD) or, on any XML error, with its lenient parser,
which expands those kept entities. A kept entity of a megabyte referenced a million times is
still a terabyte (quadratic blow-up), its regular expressions see a declaration only at the
start of a line, and it keeps entities declared before the DOCTYPE. So this guard refuses any
document that has both a DOCTYPE and an entity declaration, wherever they are: only a DOCTYPE
gives entities effect, in either parser, and feeds never need one. A DOCTYPE alone (old RSS
0.91 feeds name Netscape's DTD) is harmless: neither parser fetches it.
"""

from __future__ import annotations

from feedparser.encodings import convert_to_utf8

# feedparser holds several copies of a document while it parses; this bounds them all.
MAX_DECODED_BYTES = 16 * 1024 * 1024

ENTITIES_REFUSED = "entities are not allowed in feeds"

# The two keywords as they appear in the byte encodings a parser may read a document in,
# whatever it declares: the ASCII-compatible ones (UTF-8, Latin-1, windows-125x, ...), and
# UTF-16 and UTF-32 in either byte order. bytes.find meets them at any alignment.
_VIEWS = [
    ("<!DOCTYPE".encode(codec), "<!ENTITY".encode(codec))
    for codec in ("ascii", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
]


def _declares_entities(data: bytes, doctype: bytes, entity: bytes) -> bool:
    return doctype in data and entity in data


def decoded(body: bytes, content_type: str) -> bytes | None:
    """The document as feedparser decodes it, by its own rules with this Content-Type,
    re-encoded as UTF-8 (what its XML parser, or the fast reader, is given); None where no
    encoding fits, and feedparser would fall back to its lenient parser on the raw bytes."""
    outcome: dict[str, object] = {}
    data = convert_to_utf8({"content-type": content_type}, body, outcome)
    return data if outcome.get("encoding") else None


def refusal(body: bytes, content_type: str, utf8: bytes | None = None) -> str | None:
    """Why `body` must not reach a parser, or None when it may.

    The document is looked at in each encoding it could be read in, as bytes (a bomb behind
    whitespace, or in UTF-16 without a BOM, is not decoded by feedparser as such, but another
    reader could), and once as feedparser will read it, decoded by its own rules with the
    same Content-Type (which catches encodings such as UTF-7 or EBCDIC that spell the
    keywords in other bytes). Each look is a substring search and one decoding: a fraction
    of a millisecond on a typical feed, a thirtieth of what feedparser then takes. A caller
    that has the decoded document already (`decoded`) passes it as `utf8`, saving that.
    """
    if len(body) > MAX_DECODED_BYTES:
        return f"document larger than {MAX_DECODED_BYTES} bytes"
    if any(_declares_entities(body, doctype, entity) for doctype, entity in _VIEWS):
        return ENTITIES_REFUSED
    if utf8 is None:
        utf8 = convert_to_utf8({"content-type": content_type}, body, {})
    if len(utf8) > MAX_DECODED_BYTES:
        return f"document larger than {MAX_DECODED_BYTES} bytes once decoded"
    doctype, entity = _VIEWS[0]
    if _declares_entities(utf8, doctype, entity):
        return ENTITIES_REFUSED
    return None
