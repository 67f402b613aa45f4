"""Filtered-stream rules: each crawler's terms as tagged rules, and the changes that bring an
app's rules there. Pure: the stream source does the calls.

Crawlers with equal terms and languages form one group and share its rules (X refuses two
rules with one value anyway). A group's terms are OR-ed into as few rules as the per-rule
length allows. Rules carry the tag `blackwidow:<group>:<n>`; rules without that prefix belong
to someone else on the same app and are never touched. A source leaving the app deletes only
the rules it owns: those of the groups it served.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sources.twitter.query import canonical_languages, canonical_terms

TAG_PREFIX = "blackwidow:"


class TermTooLong(ValueError):
    """One term with the language filter does not fit in a rule (or a search query)."""


@dataclass(frozen=True)
class Group:
    """Terms and languages some crawlers share, and the rule values that express them."""

    id: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class RemoteRule:
    id: str
    value: str
    tag: str | None

    @property
    def ours(self) -> bool:
        return (self.tag or "").startswith(TAG_PREFIX)


@dataclass
class RulePlan:
    """What to send to the rules endpoint, and which groups found no room under the cap."""

    delete_ids: list[str] = field(default_factory=list)
    add: list[tuple[str, str]] = field(default_factory=list)  # (value, tag)
    keep: dict[str, str] = field(default_factory=dict)  # rule id -> value, already in place
    over_cap: list[str] = field(default_factory=list)  # group ids


def group_id(terms: Sequence[str], languages: Sequence[str]) -> str:
    canonical = json.dumps([canonical_terms(list(terms)), canonical_languages(list(languages))])
    return hashlib.sha1(canonical.encode()).hexdigest()[:16]


def _language_filter(languages: Sequence[str]) -> str:
    if not languages:
        return ""
    if len(languages) == 1:
        return f" lang:{languages[0]}"
    return " (" + " OR ".join(f"lang:{code}" for code in languages) + ")"


def _render(quoted: Sequence[str], languages: str) -> str:
    body = quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")"
    return body + languages


def pack(terms: Sequence[str], languages: Sequence[str], max_length: int) -> list[str]:
    """The terms as few expressions of at most `max_length` characters as a greedy fill gives.

    Every term is a quoted phrase, so no term is read as an operator.
    """
    languages_text = _language_filter(canonical_languages(list(languages)))
    values: list[str] = []
    current: list[str] = []
    for term in canonical_terms(list(terms)):
        quoted = f'"{term}"'
        if len(_render([quoted], languages_text)) > max_length:
            raise TermTooLong(f"term {term!r} does not fit in {max_length} characters")
        if current and len(_render([*current, quoted], languages_text)) > max_length:
            values.append(_render(current, languages_text))
            current = []
        current.append(quoted)
    if current:
        values.append(_render(current, languages_text))
    return values


def group(terms: Sequence[str], languages: Sequence[str], max_length: int) -> Group:
    return Group(group_id(terms, languages), tuple(pack(terms, languages, max_length)))


def tag(group_id: str, index: int) -> str:
    return f"{TAG_PREFIX}{group_id}:{index}"


def group_of_tag(rule_tag: str | None) -> str | None:
    if not rule_tag or not rule_tag.startswith(TAG_PREFIX):
        return None
    return rule_tag[len(TAG_PREFIX) :].split(":", 1)[0]


def plan(groups: Iterable[Group], existing: Sequence[RemoteRule], max_rules: int) -> RulePlan:
    """Bring the app's rules to what `groups` need, in their order until the cap is reached.

    Our rules whose value is still wanted are kept whatever their tag (nothing is deleted and
    added again); our others are deleted; foreign rules stay and count against the cap.
    """
    result = RulePlan()
    foreign = {rule.value for rule in existing if not rule.ours}
    room = max_rules - len(foreign)
    wanted: dict[str, str] = {}  # value -> tag
    for g in groups:
        new_values = {v for v in g.values if v not in wanted and v not in foreign}
        if sum(1 for v in wanted if v not in foreign) + len(new_values) > room:
            result.over_cap.append(g.id)
            continue
        for index, value in enumerate(g.values):
            wanted.setdefault(value, tag(g.id, index))
    present: set[str] = set()
    for rule in existing:
        if rule.value in wanted and rule.value not in present:
            result.keep[rule.id] = rule.value
            present.add(rule.value)
        elif rule.ours:
            result.delete_ids.append(rule.id)
    result.add = [(value, rule_tag) for value, rule_tag in wanted.items() if value not in present]
    return result


def owned(
    existing: Iterable[RemoteRule], group_ids: Collection[str], rule_ids: Collection[str]
) -> list[str]:
    """The ids of the rules a source leaving the app deletes: ours that it placed or kept
    (`rule_ids`) or that are tagged for a group it served. Never a foreign rule, even one it
    shared, and never our rules of groups it did not serve."""
    return [
        rule.id
        for rule in existing
        if rule.ours and (rule.id in rule_ids or group_of_tag(rule.tag) in group_ids)
    ]


def crawlers_by_value(
    groups: Mapping[str, Group], members: Mapping[str, set[int]]
) -> dict[str, set[int]]:
    """Rule value -> the crawlers whose groups use it (a value two groups pack alike is shared)."""
    by_value: dict[str, set[int]] = {}
    for group_id_, g in groups.items():
        for value in g.values:
            by_value.setdefault(value, set()).update(members.get(group_id_, set()))
    return by_value
