"""Which reader a feed document gets: the fast one (sources.rss.fast_reader) only where it is
known to give what feedparser gives, feedparser for everything else.

The rule, measured against feedparser on the real-feed corpus and on generated feeds
(tests/component/test_fast_reader_differential.py): an RSS document (root `<rss>` or
`<rdf:RDF>`) that states no xml:base and declares no namespace but those below. Atom is left
to feedparser: feedparser-rs calls an untyped Atom title or summary HTML, and gives an entry
its feed's author. The namespaces left out are those whose elements feedparser folds into
an entry's summary, content or author (iTunes, Media RSS, Google Play: `itunes:summary`
becomes the content) or that the corpus shows read differently; an unknown one may be next.

Pure: the UTF-8 document (as feedparser decodes it) in, a yes or no out. A few regular
expression scans, a small fraction of either parse.
"""

from __future__ import annotations

import re

# namespaces whose elements both readers treat alike (or both ignore)
FAST_NAMESPACES = frozenset(
    {
        "http://purl.org/rss/1.0/",  # RSS 1.0's own elements
        "http://my.netscape.com/rdf/simple/0.9/",  # RSS 0.90's
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
        "http://purl.org/dc/elements/1.1/",
        "http://purl.org/rss/1.0/modules/content/",
        "http://purl.org/rss/1.0/modules/syndication/",
        "http://purl.org/rss/1.0/modules/slash/",
        "http://purl.org/rss/1.0/modules/taxonomy/",
        "http://wellformedweb.org/CommentAPI/",
        "http://webns.net/mvcb/",
        "http://rssnamespace.org/feedburner/ext/1.0",
        "http://www.w3.org/2005/Atom",  # in RSS: atom:link rel="self" and the like
    }
)
_ROOT = re.compile(rb"<([A-Za-z_][\w.:-]*)")
_NAMESPACE = re.compile(rb"""xmlns(?::[\w.-]+)?\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_RSS_ROOTS = (b"rss", b"rdf:RDF")
# an xml:base (feedparser-rs takes the channel's link for the base where none is stated, and
# cannot say which it is), a DOCTYPE (feedparser rewrites it before parsing)
_FEEDPARSER_FEATURES = (b"xml:base", b"<!DOCTYPE")
# two elements for one field: feedparser keeps the later of <author> and <dc:creator>, and
# <pubDate> over <dc:date>; feedparser-rs prefers dc:creator, and dc:date to a <pubDate> it
# cannot read itself
_EITHER_OR = ((b"<author", b":creator>"), (b"<pubDate", b":date>"))


def takes_fast_path(decoded: bytes) -> bool:
    """Whether the fast reader may read this UTF-8 document in feedparser's place."""
    root = _ROOT.search(decoded)
    if root is None or root.group(1) not in _RSS_ROOTS:
        return False
    if any(feature in decoded for feature in _FEEDPARSER_FEATURES):
        return False
    if any(a in decoded and b in decoded for a, b in _EITHER_OR):
        return False
    declared = {double or single for double, single in _NAMESPACE.findall(decoded)}
    return all(uri.decode("utf-8", "replace") in FAST_NAMESPACES for uri in declared)
