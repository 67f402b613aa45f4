"""Fuzz the hub's REST API against its own OpenAPI description with schemathesis.

Every operation the description lists gets generated input, valid and invalid, sent over real
HTTP to the hub on a loopback port, once with a user's token, once with the admin token and
once with the cluster secret. Whatever the input: never a 5xx, and every 4xx in the one error
shape `{"error": {"code", "message", "field"}}`. Bounded and derandomized, so a run is
reproducible.

schemathesis' lazy pytest loader (`schemathesis.pytest.from_fixture`) does not run on pytest 9.2
(it sets `Function._nodeid`, which pytest 9.2 removed), and an eager one would need the hub at
import time; so each operation's schemathesis strategy drives a plain Hypothesis test here.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from sources.model import Item
from tests.component.conftest import ADMIN, SECRET, bearer
from tests.support import served

MAX_EXAMPLES = 15  # per operation, generation mode and (crawler routes) pinned id or not
THREAD = "https://blog.example/posts/1"
FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,  # the same requests on every run: a failure reproduces
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.fixture
def hub_url(hub_app: Flask) -> Iterator[str]:
    """The hub served by waitress on a loopback port, in a thread of this process."""
    with served(hub_app, "fuzzed-hub") as url:
        yield url


@dataclass
class Seeded:
    """What the hub holds before the fuzz starts, and the headers of each kind of caller."""

    callers: dict[str, dict[str, str]]
    crawler_ids: list[int]


@pytest.fixture
def seeded(hub_app: Flask, client: FlaskClient, make_user: Callable[..., dict[str, Any]]) -> Seeded:
    """A user owning crawlers with items in one conversation, so generated input reaches real
    records and not only 404s."""
    token = make_user("fuzzer", item_limit=1000)["token"]
    body = {"source": "rss", "query": {"feeds": ["https://blog.example/feed"]}}
    ids = [
        client.post("/api/v1/crawlers", json={**body, "name": f"c{n}"}, headers=bearer(token)).json[
            "id"
        ]
        for n in range(3)
    ]
    moment = datetime(2024, 5, 1, tzinfo=UTC)
    hub_app.extensions["blackwidow"].store.add(
        [
            Item(
                id=f"{THREAD}#{crawler_id}",
                source="rss",
                url=THREAD,
                title="t",
                text="x",
                author=None,
                published_at=moment,
                fetched_at=moment,
                conversation_id=THREAD,
                crawler_id=crawler_id,
            )
            for crawler_id in ids
        ]
    )
    callers = {"user": bearer(token), "admin": bearer(ADMIN), "cluster": bearer(SECRET)}
    return Seeded(callers, ids)


def error_shape_problem(status: int, text: str) -> str | None:
    """What is wrong with a 4xx answer's body, if anything: every 4xx carries the one error
    shape, so a client can always read what went wrong and which field to fix."""
    if not 400 <= status < 500:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return f"{status} body is not JSON: {text[:200]!r}"
    error = body.get("error") if isinstance(body, dict) else None
    if not (isinstance(error, dict) and set(error) == {"code", "message", "field"}):
        return f"{status} body is not {{'error': {{code, message, field}}}}: {body!r}"
    field = error["field"]
    if not (isinstance(error["code"], str) and isinstance(error["message"], str)):
        return f"{status} error code or message is not a string: {body!r}"
    if field is not None and not isinstance(field, str):
        return f"{status} error field is neither null nor a string: {body!r}"
    return None


def error_shape(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> None:
    """The error-shape rule as a schemathesis check."""
    if case.method.upper() != "HEAD":
        problem = error_shape_problem(response.status_code, response.text)
        assert problem is None, problem


def takes_input(operation: schemathesis.APIOperation, path: bool = True) -> bool:
    """Whether there is anything to make invalid: a parameter (path ones only if `path`) or a
    body. Invalid input needs something to make invalid."""
    groups = [operation.query, operation.headers, operation.body]
    return any(len(group) for group in (*groups, operation.path_parameters if path else []))


def runs(operation: schemathesis.APIOperation, crawler_id: int) -> list[tuple[str, Any]]:
    """(name, strategy) pairs: valid and invalid input, and for a route naming a crawler the
    same again with the id pinned to a real crawler, since generated ids mostly miss."""
    found = []
    for mode in GenerationMode:
        if mode.is_positive or takes_input(operation):
            found.append((mode.value, operation.as_strategy(generation_mode=mode)))
        if "crawler_id" in operation.path_parameters and (
            mode.is_positive or takes_input(operation, path=False)
        ):
            pinned = operation.as_strategy(
                generation_mode=mode, path_parameters={"crawler_id": crawler_id}
            )
            found.append((f"{mode.value}, crawler {crawler_id}", pinned))
    return found


def fuzz(strategy: Any, callers: dict[str, dict[str, str]], counts: Counter[str]) -> None:
    """Send each generated case once per caller and check every answer."""

    @FUZZ_SETTINGS
    @given(case=strategy)
    def run(case: schemathesis.Case) -> None:
        counts["examples"] += 1
        for headers in callers.values():
            response = case.call(headers=headers, timeout=10)
            counts[f"{response.status_code // 100}xx"] += 1
            case.validate_response(response, checks=[not_a_server_error, error_shape])

    run()


@pytest.mark.slow
def test_no_generated_input_makes_the_hub_fail_or_break_its_error_shape(
    hub_url: str, seeded: Seeded
) -> None:
    schema = schemathesis.openapi.from_url(f"{hub_url}/api/v1/openapi.json")
    schema.config.update(base_url=hub_url)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 13, [op.label for op in operations]
    operations.sort(key=lambda op: op.method.upper() == "DELETE")  # deletes last: ids stay real
    counts: Counter[str] = Counter()
    failures: list[str] = []
    started = time.monotonic()
    for operation in operations:
        for name, strategy in runs(operation, seeded.crawler_ids[0]):
            try:
                fuzz(strategy, seeded.callers, counts)
            except Exception as error:  # every operation runs; all failures are shown at once
                failures.append(f"{operation.label} ({name}): {error}")
    elapsed = time.monotonic() - started
    print(f"\nfuzz: {len(operations)} operations, {dict(counts)}, {elapsed:.1f}s")
    assert not failures, "\n\n".join(failures)
    assert counts["2xx"] and counts["4xx"]  # it reached both the views and the refusals


HOSTILE_BODIES = {
    "not JSON": b"{not json",
    "not UTF-8": b'{"name": "\xff\xfe"}',
    "nested past the recursion limit": b"[" * 100_000 + b"]" * 100_000,
    "an integer of 5000 digits": b'{"item_limit": ' + b"9" * 5000 + b"}",
    "NaN": b'{"item_limit": NaN, "capacity": NaN}',
    "a lone surrogate in a name": b'{"name": "a\\ud800"}',
    "a lone surrogate in a URL": b'{"url": "http://a.example/\\udfff"}',
    "a lone surrogate in a key": b'{"\\ud800": 1}',
    "null": b"null",
    "a list": b"[]",
    "a string": b'"x"',
}


def test_hostile_bodies_get_a_4xx_in_the_error_shape(hub_url: str, seeded: Seeded) -> None:
    """A catalogue of bodies generators do not make, sent to every operation that takes one."""
    spec = requests.get(f"{hub_url}/api/v1/openapi.json", timeout=10).json()
    targets = [
        (method.upper(), re.sub(r"\{[^}]+\}", str(seeded.crawler_ids[1]), path))
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "requestBody" in operation
    ]
    assert len(targets) >= 4, targets
    failures = []
    for method, path in targets:
        for name, body in HOSTILE_BODIES.items():
            for caller, headers in seeded.callers.items():
                sent = {**headers, "Content-Type": "application/json"}
                response = requests.request(
                    method, f"{hub_url}{path}", data=body, headers=sent, timeout=10
                )
                problem = error_shape_problem(response.status_code, response.text)
                if not 400 <= response.status_code < 500:
                    problem = f"{response.status_code}, not a 4xx"
                if problem:
                    failures.append(f"{method} {path}, {name}, as {caller}: {problem}")
    assert not failures, "\n".join(failures)
