"""The domain's refusals: not found, forbidden, invalid, conflict, each with a code, a message
and the field to fix. They know nothing of HTTP: blackwidow.core.errors maps them to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self


class DomainError(Exception):
    """A refusal the caller can act on; `field` names the input to fix, when there is one.
    The message is whole as the caller reads it (`query.feeds.0: Not a valid URL.`)."""

    code: ClassVar[str]

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def reworded(self, message: str, field: str | None) -> Self:
        """The same refusal told in other terms, such as an OPML file's instead of a body's."""
        return type(self)(message, field)

    def within(self, prefix: str) -> Self:
        """The same refusal about a part of a larger input (see `part_of`)."""
        return self.reworded(*part_of(prefix, self.message, self.field))


class NotFound(DomainError):
    """No such thing, or none the caller may see: another user's is missing, not forbidden."""

    code = "not_found"


class Forbidden(DomainError):
    """The caller may not do this whatever they send, such as the admin creating a crawler."""

    code = "forbidden"


class Invalid(DomainError):
    """An input the domain refuses; `field` names it, as the message does."""

    code = "invalid"

    @classmethod
    def from_messages(cls, messages: Any, prefix: str | None = None) -> Self:
        """The refusal of a schema's error map, naming its first bad field; `prefix` places a
        nested schema (e.g. "query")."""
        inner, message = first_invalid_field(messages)
        field = ".".join(part for part in (prefix, inner) if part) or None
        return cls(f"{field}: {message}" if field else message, field)


class Conflict(DomainError):
    """The input is fine but clashes with what exists, such as a second user of one name."""

    code = "conflict"


def part_of(prefix: str, message: str, field: str | None) -> tuple[str, str]:
    """The message and field of a refusal about a part of a larger input: `query.feeds.0` of
    the fourth entry of a batch becomes `crawlers.3.query.feeds.0`, in both."""
    named = field is not None and message.startswith(f"{field}: ")
    return (
        f"{prefix}.{message}" if named else f"{prefix}: {message}",
        f"{prefix}.{field}" if field else prefix,
    )


def first_invalid_field(messages: Any, path: tuple[str, ...] = ()) -> tuple[str | None, str]:
    """The dotted path and message of the first validation error in a nested error map:
    `{"query": {"feeds": {0: ["Not a valid URL."]}}}` names the field `query.feeds.0`."""
    if isinstance(messages, Mapping) and messages:
        key, value = next(iter(messages.items()))
        if key == "_schema":
            return first_invalid_field(value, path)
        return first_invalid_field(value, (*path, str(key)))
    if isinstance(messages, list | tuple) and messages:
        return first_invalid_field(messages[0], path)
    return (".".join(path) or None), str(messages)
