"""Feed parsing over the real-feed corpus: parse CPU per feed, and how many feeds are collected
completely, for today's parse_feed against the pipeline before it, in the same run; then
what the fast reader saves, feedparser alone against parse_feed's routing.

The baseline is the old path, rebuilt here in a few lines: a strict defusedxml parse of the
whole document (entities forbidden), then feedparser told `application/xml` whatever the
server said. Today's: the entity guard, feedparser with the response's Content-Type, and the
entry HTML sanitised by nh3. Both turn entries into items the same way (the baseline without
HTML), so the difference is the pre-check, the decoding and the sanitising. A feed is
collected completely when the path yields as many items as feedparser alone finds distinct
entries (tests/servers/feed_corpus.py).

The readers: every feed parsed by parse_feed with feedparser as its only reader, and as
routed (feedparser-rs for the feeds sources.rss.parser_choice lets it read, feedparser for
the rest); over the fast-path feeds, and over the whole corpus (the mix).

    .venv/bin/python -m bench.feed_parse [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import defusedxml.ElementTree
import feedparser
import feedparser_rs

from sources.rss import entry_items
from sources.rss import parse as rss_parse
from sources.rss.fast_reader import fast_read
from sources.rss.feed_guard import decoded, refusal
from sources.rss.parse import FeedError, content_type, feedparser_read, parse_feed, parse_with
from tests.servers.feed_corpus import (
    MANIFEST,
    REAL,
    distinct_entries,
    feedparser_alone,
    read_fast,
)

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


# parse_feed with feedparser as its only reader
feedparser_only = functools.partial(parse_with, feedparser_read)


def old_parse_feed(body: bytes, url: str, at: datetime, headers: Mapping[str, str]) -> Any:
    """The pipeline before: strict pre-parse, fixed content type, no HTML kept, feedparser."""
    old_check(body, url, at, headers)
    fixed = mock.patch.object(rss_parse, "refusal", return_value=None)
    no_html = mock.patch.object(entry_items, "sanitised_html", return_value=None)
    with fixed, no_html:
        return feedparser_only(body, url, at, {"Content-Type": "application/xml"})


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
            items = parse(
                bodies[name], "https://f.example/", FETCHED_AT, {"Content-Type": MANIFEST[name]}
            )[0]
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
    paths = {"before": old_parse_feed, "after": feedparser_only}
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
    readers(bodies, args.rounds)
    print(f"feedparser {feedparser.__version__}, feedparser-rs {feedparser_rs.__version__}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def _feedparser_alone(body: bytes, url: str, at: datetime, headers: Mapping[str, str]) -> Any:
    return feedparser_read(body, content_type(headers, body))


def _fast_alone(body: bytes, url: str, at: datetime, headers: Mapping[str, str]) -> Any:
    utf8 = decoded(body, content_type(headers, body))
    return fast_read(utf8) if utf8 is not None else None


# a document read into entries, nothing extracted: the decoding and the parse
READERS: dict[str, Parse] = {"feedparser": _feedparser_alone, "fast": _fast_alone}


def rereading(parse: Parse, bodies: dict[str, bytes]) -> Parse:
    """`parse` given as known the items it read from the same document before: a poll that
    finds every entry known, and so extracts none (a changed feed mostly repeats itself)."""
    known: dict[str, dict[str, Any]] = {}
    for name, body in bodies.items():
        url = f"https://feeds.example/{name}"
        with contextlib.suppress(FeedError):
            items = parse(body, url, FETCHED_AT, {"Content-Type": MANIFEST[name]})[0]
            known[url] = {item.id: item for item in items}

    def parse_known(body: bytes, url: str, at: datetime, headers: Mapping[str, str]) -> Any:
        return parse(body, url, at, headers, known.get(url, {}))  # type: ignore[call-arg]

    return parse_known


def readers(bodies: dict[str, bytes], rounds: int) -> None:
    """parse_feed's CPU per feed with feedparser alone and as routed, over the fast-path feeds
    and over the whole corpus, first reads (every item extracted) and re-reads (none)."""
    fast = {n for n, body in bodies.items() if read_fast(body, {"Content-Type": MANIFEST[n]})}
    print(f"readers: {len(fast)} of {len(bodies)} feeds take the fast path")
    alone = {label: cpu_per_feed(read, bodies, rounds) for label, read in READERS.items()}
    median = {label: statistics.median(alone[label][name] for name in fast) for label in READERS}
    print(
        f"the readers alone, fast-path feeds: median {median['feedparser'] * 1e3:.2f} ms CPU per "
        f"feed for feedparser, {median['fast'] * 1e3:.3f} ms for the fast reader "
        f"(ratio {median['feedparser'] / median['fast']:.0f})"
    )
    first: dict[str, Parse] = {"feedparser": feedparser_only, "routed": parse_feed}
    again = {label: rereading(parse, bodies) for label, parse in first.items()}
    for reading, paths in (("first read", first), ("re-read", again)):
        per_feed = {label: cpu_per_feed(parse, bodies, rounds) for label, parse in paths.items()}
        for scope, names in (("fast-path feeds", fast), ("whole corpus", set(bodies))):
            median = {k: statistics.median(v[name] for name in names) for k, v in per_feed.items()}
            total = {k: sum(v[name] for name in names) for k, v in per_feed.items()}
            print(
                f"{reading:>10}, {scope:>15}: median {median['feedparser'] * 1e3:.2f} ms CPU per "
                f"feed with feedparser, {median['routed'] * 1e3:.2f} ms routed (ratio "
                f"{median['feedparser'] / median['routed']:.1f}); in all "
                f"{total['feedparser'] * 1e3:.0f} ms against {total['routed'] * 1e3:.0f} ms "
                f"(ratio {total['feedparser'] / total['routed']:.1f})"
            )


if __name__ == "__main__":
    main()
