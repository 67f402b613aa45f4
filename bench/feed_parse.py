"""Feed parsing over the real-feed corpus: parse CPU per feed, and how many feeds are collected
completely, for today's parse_feed against the pipeline before it, in the same run.

The baseline is the old path, rebuilt here in a few lines: a strict defusedxml parse of the
whole document (entities forbidden), then feedparser told `application/xml` whatever the
server said. Today's: the entity guard, feedparser with the response's Content-Type, and the
entry HTML sanitised by nh3. Both turn entries into items the same way (the baseline without
HTML), so the difference is the pre-check, the decoding and the sanitising. A feed is
collected completely when the path yields as many items as feedparser alone finds distinct
entries (tests/servers/feed_corpus.py).

    .venv/bin/python -m bench.feed_parse [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import defusedxml.ElementTree
import feedparser

from sources.rss import parse as rss_parse
from sources.rss.feed_guard import refusal
from sources.rss.parse import FeedError, content_type, parse_feed
from tests.servers.feed_corpus import MANIFEST, REAL, distinct_entries, feedparser_alone

FETCHED_AT = datetime(2024, 5, 1, tzinfo=UTC)
Parse = Callable[[bytes, str, datetime, Mapping[str, str]], Any]


def old_check(body: bytes, url: str, at: datetime, headers: Mapping[str, str]) -> None:
    """The pre-check before: a strict parse of the whole document."""
    try:
        defusedxml.ElementTree.fromstring(
            body, forbid_dtd=False, forbid_entities=True, forbid_external=True
        )
    except Exception as error:  # entities, external references, or ill-formed XML
        raise FeedError(f"refused: {error}") from None


def new_check(body: bytes, url: str, at: datetime, headers: Mapping[str, str]) -> None:
    """Today's pre-check: the entity guard."""
    refusal(body, content_type(headers, body))


def old_parse_feed(body: bytes, url: str, at: datetime, headers: Mapping[str, str]) -> Any:
    """The pipeline before: strict pre-parse, fixed content type, no HTML kept."""
    old_check(body, url, at, headers)
    fixed = mock.patch.object(rss_parse, "refusal", return_value=None)
    no_html = mock.patch.object(rss_parse, "sanitised_html", return_value=None)
    with fixed, no_html:
        return parse_feed(body, url, at, {"Content-Type": "application/xml"})


def cpu_per_feed(parse: Parse, bodies: dict[str, bytes], rounds: int) -> dict[str, float]:
    """Median process CPU seconds of one parse of each feed (refusals count what they cost)."""
    times: dict[str, list[float]] = {name: [] for name in bodies}
    for _ in range(rounds):
        for name, body in bodies.items():
            started = time.process_time()
            with contextlib.suppress(FeedError):
                parse(
                    body,
                    f"https://feeds.example/{name}",
                    FETCHED_AT,
                    {"Content-Type": MANIFEST[name]},
                )
            times[name].append(time.process_time() - started)
    return {name: statistics.median(spent) for name, spent in times.items()}


def collected(parse: Parse, bodies: dict[str, bytes], expected: dict[str, int]) -> set[str]:
    """The feeds, of those feedparser reads, that the path collects completely."""
    done = set()
    for name, count in expected.items():
        try:
            items, _ = parse(
                bodies[name], "https://f.example/", FETCHED_AT, {"Content-Type": MANIFEST[name]}
            )
        except FeedError:
            continue
        if len(items) == count:
            done.add(name)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bodies = {name: (REAL / name).read_bytes() for name in MANIFEST}
    read = {name: feedparser_alone(name) for name in MANIFEST}
    expected = {name: distinct_entries(p) for name, p in read.items() if p.entries}
    size = sum(map(len, bodies.values()))
    print(
        f"corpus: {len(bodies)} feeds, {size / 1e6:.1f} MB; feedparser alone reads {len(expected)}"
    )
    paths = {"before": old_parse_feed, "after": parse_feed}
    per_feed = {label: cpu_per_feed(parse, bodies, args.rounds) for label, parse in paths.items()}
    done = {label: collected(parse, bodies, expected) for label, parse in paths.items()}
    both = done["before"] & done["after"]  # the same work on each side: a fair comparison
    medians = {label: statistics.median(per_feed[label][name] for name in both) for label in paths}
    for label in paths:
        print(
            f"{label:>6}: collected completely {len(done[label])} of {len(expected)}; "
            f"median {medians[label] * 1e3:.2f} ms CPU per feed over the {len(both)} both collect, "
            f"{sum(per_feed[label].values()) * 1e3:.0f} ms for the whole corpus"
        )
    print(f" ratio: after / before = {medians['after'] / medians['before']:.2f}")
    missed = sorted(set(expected) - done["before"])
    print("before misses: " + ", ".join(missed))
    checks = {"strict pre-parse (before)": old_check, "entity guard (after)": new_check}
    for label, check in checks.items():
        per_feed = cpu_per_feed(check, bodies, args.rounds)
        print(f"{label}: median {statistics.median(per_feed.values()) * 1e3:.3f} ms per feed")
    print(f"feedparser version {feedparser.__version__}")


if __name__ == "__main__":
    main()
