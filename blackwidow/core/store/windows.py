"""What a page, stream or search read asks of a store: a time window on one of an item's
instants, the words a search looks for, and the page it gets back. Values only; each store
turns them into its own query.

A page's position is where the next page starts, opaque to callers and JSON-serialisable:
the hub signs it into a cursor (blackwidow.api.paging) and hands it back on the next request.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sources.model import Item

TimeField = Literal["fetched_at", "published_at"]
TIME_FIELDS: tuple[TimeField, ...] = ("fetched_at", "published_at")
_WORD = re.compile(r"[^\W_]+")  # a run of letters and digits, in a text already `folded`
_DOTLESS_I = "\u0131"  # folds to itself, but its capital I to i
STREAM_BATCH = 1000  # rows a stream reads at a time: its memory, whatever the item count


class BadPosition(ValueError):
    """A position this store did not give (another store's, or an older format's)."""


@dataclass(frozen=True)
class Window:
    """Items whose `by` instant is at or after `since` and before `until`; an open side is
    unbounded. A bounded window on published_at leaves out items that have no published_at."""

    since: datetime | None = None
    until: datetime | None = None
    by: TimeField = "fetched_at"

    @property
    def bounded(self) -> bool:
        return self.since is not None or self.until is not None


EVERYTHING = Window()


@dataclass(frozen=True)
class ItemPage:
    """At most the asked-for items, and where the next page starts (None: this is the last).

    A store may answer a last page that is empty when it could not tell the end beforehand
    (Cassandra's paging state says "maybe more").
    """

    items: list[Item]
    next: Any = None


def words(text: str) -> tuple[str, ...]:
    """The distinct words of a text as `folded`, in the order given: what a search asks every
    item found to hold, and what the stores index. Anything but letters and digits separates
    words and is not searched (no operators, no phrases)."""
    return tuple(dict.fromkeys(_WORD.findall(folded(text))))


def searchable(text: str | None) -> str | None:
    """Every word of a text as `folded`, repeats kept, one space apart: what SQLite's index
    reads, so that its tokenizer sees exactly the words a query is cut into, and its ranking
    still counts how often each occurs."""
    return None if text is None else " ".join(_WORD.findall(folded(text)))


def folded(text: str) -> str:
    """A text in the one form search compares, whatever form it was typed or stored in: NFKC
    (full-width and ligature letters are the plain ones), case folded (ß is ss; the dotless
    i is i, as its capital I folds), without accents in any script (é is e, Greek ά and
    Cyrillic ё are their letters without the mark). Done before words are cut: a decomposed
    é is e and a combining mark, which would otherwise split its word."""
    if text.isascii():  # the common case, and already in NFKC with no marks
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFKC", plain).replace(_DOTLESS_I, "i")


def checked(position: Any, shape: tuple[type | tuple[type, ...], ...]) -> list[Any]:
    """A position as a list of the given types, or BadPosition."""
    if not (
        isinstance(position, list)
        and len(position) == len(shape)
        and all(isinstance(value, kind) for value, kind in zip(position, shape, strict=True))
    ):
        raise BadPosition("not a position this store gave")
    return position


def in_batches(read: Callable[[Any], ItemPage]) -> Iterator[Item]:
    """Every item of the pages `read(position)` gives, one page at a time, to the last: for
    stores whose pages are cheap wherever they start (keyset pages)."""
    after = None
    while True:
        page = read(after)
        yield from page.items
        if page.next is None:
            return
        after = page.next
