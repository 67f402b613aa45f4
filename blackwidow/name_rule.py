"""What a crawler's name may hold: one rule for the API, the dashboard, the CLI and OPML.

A name is one line of text, trimmed. It holds no control characters (tab and newline among
them) and nothing XML cannot carry, since an OPML export writes it into an attribute, and one
such character makes the whole document unreadable. Surrounding white space is trimmed on
every way in, as every feed reader trims an outline's title: a name kept padded would not
survive its own export. Pure, so the CLI checks a name before it calls the hub.
"""

from __future__ import annotations

import re

NAME_LENGTH = 200  # at most, trimmed (the column's length)
# Unicode's control characters (Cc: C0, DEL, C1), lone surrogates, and the two
# noncharacters XML 1.0 excludes
NOT_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_UNFIT_RUN = re.compile(f"{NOT_TEXT.pattern}+")
FALLBACK = "Unnamed"  # a made-up name that was nothing but what a name may not hold


class NameRefused(ValueError):
    """The name breaks the rule; the message says how, as a field error would."""


def checked(name: str) -> str:
    """The name as stored: trimmed; NameRefused when it is then empty, too long, or holds a
    character a name may not."""
    trimmed = name.strip()
    if not trimmed:
        raise NameRefused("must not be empty or only white space")
    if len(trimmed) > NAME_LENGTH:
        raise NameRefused(f"longer than {NAME_LENGTH} characters")
    why = unfit_character(trimmed)
    if why is not None:
        raise NameRefused(why)
    return trimmed


def unfit_character(name: str) -> str | None:
    """Why `name` holds a character a name may not (`U+0007 at 4`), or None."""
    found = NOT_TEXT.search(name)
    if found is None:
        return None
    return f"must not contain control characters: U+{ord(found[0]):04X} at {found.start()}"


def made_up(text: str) -> str:
    """A name made of text nobody typed as one (a feed's title, a category in a reader's
    file): each run of characters a name may not hold becomes one space, trimmed and cut to
    NAME_LENGTH; FALLBACK when nothing is left."""
    cleaned = _UNFIT_RUN.sub(" ", text).strip()[:NAME_LENGTH].rstrip()
    return cleaned or FALLBACK
