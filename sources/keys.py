"""Source keys: a stable id for what a data source fetches, so equal queries share one source.

The key is a UUID (version 5) of the canonical fetch target. It is the same in every process
and on every machine, which routing relies on (Python's hash() is not).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from sources.registry import SOURCE_TYPES

_NAMESPACE = uuid.UUID("6f0c7a52-3f4e-5b9e-9d2a-bd1f1f0e7a11")


def source_key(source: str, query: dict[str, Any], credential_owner: int | None = None) -> str:
    """The source key (query uuid) of a crawler's validated query.

    `credential_owner` is the user whose stored credential the query names: two users'
    credentials of one name are two accounts, so they must not share a data source.
    """
    target = {"source": source, **SOURCE_TYPES[source].fetch_target(query)}
    if credential_owner is not None:
        target["credential_owner"] = credential_owner
    canonical = json.dumps(target, sort_keys=True, separators=(",", ":"))
    return str(uuid.uuid5(_NAMESPACE, canonical))
