"""JSON request bodies the hub can read and store, checked before any view parses them.

webargs decodes a JSON body itself and turns only a JSONDecodeError into an error answer: a
body nested past Python's recursion limit, or holding an integer of more than 4300 digits,
came out as a 500. A string with a lone surrogate (`"\\ud800"`) is valid JSON text but not
Unicode: SQLite and PostgreSQL refuse to store it, and no node could fetch a URL holding one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flask import request

from blackwidow.core.errors import ApiError

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def refuse_unreadable_json() -> None:
    """Run by the gate once the caller is admitted: 400 for a JSON body Python cannot
    decode, 422 naming the field that holds a lone surrogate. Bodies of other types are left
    to the views."""
    if not request.is_json:
        return
    raw = request.get_data(cache=True)  # cached: the view's parser reads it again
    if not raw:
        return
    try:
        body = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ApiError(400, "invalid", "Invalid JSON body: nested too deeply") from None
    except UnicodeDecodeError:
        raise ApiError(400, "invalid", "Invalid JSON body: not UTF-8") from None
    except json.JSONDecodeError as error:
        raise ApiError(400, "invalid", f"Invalid JSON body: {error}") from None
    except ValueError:  # the only other: an integer past Python's conversion limit
        raise ApiError(400, "invalid", "Invalid JSON body: a number with too many digits") from None
    path = lone_surrogate_at(body)
    if path is not None:
        field = ".".join(path) or None
        message = "not valid Unicode (a lone surrogate)"
        raise ApiError(422, "invalid", f"{field}: {message}" if field else message, field)


def lone_surrogate_at(body: Any) -> tuple[str, ...] | None:
    """The path of the first string (key or value) holding a lone surrogate, in document order.

    Iterative: a body nested close to the recursion limit parsed fine and must not fail here.
    """
    pending: list[tuple[tuple[str, ...], Any]] = [((), body)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if _LONE_SURROGATE.search(value):
                return path
        elif isinstance(value, dict):
            for key in value:
                if _LONE_SURROGATE.search(key):
                    return (*path, _printable(key))
            pending.extend(((*path, key), inner) for key, inner in reversed(value.items()))
        elif isinstance(value, list):
            pending.extend(
                ((*path, str(n)), inner) for n, inner in reversed(list(enumerate(value)))
            )
    return None


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
