"""Credentials of billed sources: how a query names one, and how a node finds its secret.

A query names a credential (`"credential": "default"` when it names none). The secret comes
with the pushed spec when the user stored it on the hub, else from the node's own
`BLACKWIDOW_CREDENTIALS`. Secrets are never logged: errors name the credential, not its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import fields, validate

from sources.model import SubscriberSpec

DEFAULT_CREDENTIAL = "default"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z"
name_rule = validate.Regexp(
    NAME_PATTERN, error="1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"
)


def credential_field() -> fields.String:
    """The `credential` field of a billed source's query."""
    return fields.String(
        load_default=DEFAULT_CREDENTIAL,
        validate=name_rule,
        metadata={"description": "name of a credential stored for the user, or on the nodes"},
    )


class MissingCredential(LookupError):
    """The query names a credential neither the hub pushed nor the node has."""

    field = "query.credential"


class CredentialBook:
    """A node's own credentials: source -> name -> validated secret fields."""

    def __init__(self, by_source: Mapping[str, Mapping[str, dict[str, Any]]] | None = None) -> None:
        self._by_source = {source: dict(names) for source, names in (by_source or {}).items()}

    def secret(self, spec: SubscriberSpec) -> dict[str, Any]:
        """The secret a subscriber's data source connects with; the pushed one comes first."""
        if spec.credential is not None:
            return spec.credential
        name = spec.query.get("credential", DEFAULT_CREDENTIAL)
        try:
            return self._by_source[spec.source][name]
        except KeyError:
            raise MissingCredential(
                f"no {spec.source} credential named {name!r}: store one for the user, "
                "or give the nodes one in BLACKWIDOW_CREDENTIALS"
            ) from None

    def names(self) -> dict[str, list[str]]:
        """What a node may say about its credentials: names only."""
        return {source: sorted(names) for source, names in sorted(self._by_source.items())}
