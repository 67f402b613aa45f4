"""Filtered-stream rules: terms packed into quoted rules, and the plan that brings an app there."""

from __future__ import annotations

import pytest

from sources.twitter.rules import (
    TAG_PREFIX,
    Group,
    RemoteRule,
    TermTooLong,
    crawlers_by_value,
    group,
    group_id,
    group_of_tag,
    owned,
    pack,
    plan,
    tag,
)

# --- pack -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("terms", "languages", "expected"),
    [
        (["python"], [], ['"python"']),
        (["python", "rust"], [], ['("python" OR "rust")']),
        (["python"], ["en"], ['"python" lang:en']),
        (["python", "rust"], ["en"], ['("python" OR "rust") lang:en']),
        (["python"], ["fr", "en"], ['"python" (lang:en OR lang:fr)']),
        (["python"], ["en", "en"], ['"python" lang:en']),  # a language twice is once
        (["or", "-is:retweet"], [], ['("-is:retweet" OR "or")']),  # operators stay phrases
    ],
)
def test_pack_quotes_every_term_and_adds_the_language_filter(terms, languages, expected):
    assert pack(terms, languages, max_length=512) == expected


def test_pack_fills_each_rule_greedily_before_starting_the_next():
    terms = ["aaaa", "bbbb", "cccc", "dddd", "eeee"]
    # '("aaaa" OR "bbbb")' is 18 characters, adding ' OR "cccc"' makes 28
    assert pack(terms, [], max_length=28) == [
        '("aaaa" OR "bbbb" OR "cccc")',
        '("dddd" OR "eeee")',
    ]
    assert pack(terms, [], max_length=27) == [
        '("aaaa" OR "bbbb")',
        '("cccc" OR "dddd")',
        '"eeee"',
    ]


def test_pack_never_exceeds_max_length_and_loses_no_term():
    terms = [f"term number {i}" for i in range(40)]
    for max_length in (40, 64, 100, 257, 1024):
        values = pack(terms, ["en", "fr"], max_length)
        assert all(len(value) <= max_length for value in values)
        assert sum(value.count('"') for value in values) == 2 * len(terms)
        assert all(any(f'"{term}"' in value for value in values) for term in terms)


def test_pack_uses_as_few_rules_as_the_length_allows():
    terms = [f"t{i:02}" for i in range(30)]  # each quoted term is 5 characters, " OR " 4
    assert len(pack(terms, [], max_length=10_000)) == 1
    # a rule of n terms is 2 + 5n + 4(n - 1) = 9n - 2 characters: 100 allows 11 terms
    assert [value.count('"') // 2 for value in pack(terms, [], max_length=100)] == [11, 11, 8]


def test_pack_counts_the_language_filter_in_the_length():
    value = '"python" (lang:en OR lang:fr)'
    assert pack(["python"], ["en", "fr"], max_length=len(value)) == [value]
    with pytest.raises(TermTooLong):
        pack(["python"], ["en", "fr"], max_length=len(value) - 1)


def test_a_term_that_cannot_fit_is_refused_naming_it():
    with pytest.raises(TermTooLong, match="a very long phrase"):
        pack(["ok", "a very long phrase"], [], max_length=15)


def test_term_too_long_is_a_value_error():
    assert issubclass(TermTooLong, ValueError)


def test_pack_writes_canonical_terms_sorted_and_deduplicated():
    assert pack(["Rust", "python  3", "PYTHON 3", " rust "], [], max_length=512) == [
        '("python 3" OR "rust")'
    ]


# --- groups ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("terms", "languages"),
    [
        (["Python  3", "rust"], ["en", "fr"]),
        (["rust", "python 3"], ["fr", "en"]),
        (["RUST", "python\t3", "Rust"], ["en", "fr", "en"]),
    ],
)
def test_equal_canonical_terms_give_equal_values_and_group_ids(terms, languages):
    reference = group(["python 3", "rust"], ["en", "fr"], max_length=512)
    assert group(terms, languages, max_length=512) == reference
    assert group_id(terms, languages) == reference.id


@pytest.mark.parametrize(
    ("terms", "languages"),
    [
        (["python 3"], ["en", "fr"]),  # fewer terms
        (["python 3", "rust", "go"], ["en", "fr"]),  # more terms
        (["python3", "rust"], ["en", "fr"]),  # spacing inside a word matters
        (["python 3", "rust"], ["en"]),  # other languages
        (["python 3", "rust"], []),  # no language filter
    ],
)
def test_different_terms_or_languages_give_different_group_ids(terms, languages):
    assert group_id(terms, languages) != group_id(["python 3", "rust"], ["en", "fr"])


def test_group_id_does_not_mix_terms_and_languages():
    assert group_id(["en"], []) != group_id([], ["en"])


@pytest.mark.parametrize(
    ("rule_tag", "expected"),
    [
        (tag("abc123", 0), "abc123"),
        (tag("abc123", 7), "abc123"),
        (f"{TAG_PREFIX}abc123", "abc123"),
        ("someone-else", None),
        ("someone-else:blackwidow:abc", None),
        ("", None),
        (None, None),
    ],
)
def test_group_of_tag(rule_tag, expected):
    assert group_of_tag(rule_tag) == expected


def test_tags_carry_the_prefix_the_plan_treats_as_ours():
    assert tag("g", 2) == "blackwidow:g:2"
    assert RemoteRule("1", "x", tag("g", 2)).ours
    assert not RemoteRule("1", "x", "mine").ours
    assert not RemoteRule("1", "x", None).ours


# --- plan -----------------------------------------------------------------------------------


def ours(rule_id: str, value: str, in_group: str = "old", index: int = 0) -> RemoteRule:
    return RemoteRule(rule_id, value, tag(in_group, index))


def foreign(rule_id: str, value: str) -> RemoteRule:
    return RemoteRule(rule_id, value, "someone-else")


A = Group("ga", ('"a1"', '"a2"'))
B = Group("gb", ('"b"',))
C = Group("gc", ('"c1"', '"c2"', '"c3"'))


def test_plan_adds_every_value_of_a_fresh_app_tagged_by_group_and_index():
    result = plan([A, B], existing=[], max_rules=10)

    assert result.add == [
        ('"a1"', "blackwidow:ga:0"),
        ('"a2"', "blackwidow:ga:1"),
        ('"b"', tag("gb", 0)),
    ]
    assert result.delete_ids == []
    assert result.keep == {}
    assert result.over_cap == []


def test_plan_keeps_our_rules_still_wanted_whatever_their_tag():
    existing = [ours("1", '"a1"', in_group="ga"), ours("2", '"a2"', in_group="renamed", index=9)]

    result = plan([A], existing, max_rules=10)

    assert result.keep == {"1": '"a1"', "2": '"a2"'}
    assert result.add == []
    assert result.delete_ids == []


def test_plan_deletes_only_our_unwanted_rules_and_never_touches_foreign_ones():
    existing = [ours("1", '"gone"'), foreign("2", '"theirs"'), RemoteRule("3", '"untagged"', None)]

    result = plan([B], existing, max_rules=10)

    assert result.delete_ids == ["1"]
    assert result.keep == {}
    assert result.add == [('"b"', tag("gb", 0))]


def test_no_groups_deletes_all_of_ours_and_nothing_else():
    existing = [ours("1", '"a1"'), foreign("2", '"x"'), ours("3", '"b"')]

    result = plan([], existing, max_rules=10)

    assert sorted(result.delete_ids) == ["1", "3"]
    assert result.add == [] and result.keep == {} and result.over_cap == []


def test_foreign_rules_count_against_the_cap():
    existing = [foreign("1", '"x"'), foreign("2", '"y"')]

    result = plan([A, B], existing, max_rules=4)  # room for 2 of ours

    assert [value for value, _ in result.add] == ['"a1"', '"a2"']
    assert result.over_cap == ["gb"]


def test_groups_that_do_not_fit_go_over_cap_in_order_and_smaller_ones_still_fit():
    result = plan([A, C, B, Group("gd", ('"d1"', '"d2"'))], existing=[], max_rules=4)

    assert result.over_cap == ["gc", "gd"]
    assert [value for value, _ in result.add] == ['"a1"', '"a2"', '"b"']


def test_our_rules_of_an_over_cap_group_are_deleted():
    existing = [ours("1", '"c1"', in_group="gc")]

    result = plan([A, C], existing, max_rules=3)

    assert result.over_cap == ["gc"]
    assert result.delete_ids == ["1"]


def test_a_value_two_groups_want_is_added_once_and_costs_one_rule():
    shared = Group("gs", ('"a1"', '"s"'))

    result = plan([A, shared], existing=[], max_rules=3)

    assert result.over_cap == []
    assert result.add == [('"a1"', tag("ga", 0)), ('"a2"', tag("ga", 1)), ('"s"', tag("gs", 1))]


def test_a_foreign_rule_with_a_wanted_value_is_adopted_not_duplicated():
    existing = [foreign("9", '"b"')]

    result = plan([B], existing, max_rules=10)

    assert result.keep == {"9": '"b"'}
    assert result.add == []
    assert result.delete_ids == []


def test_an_adopted_foreign_rule_takes_no_more_room_than_itself():
    """The app holds the foreign rule and one more: both groups fit under a cap of 2."""
    existing = [foreign("9", '"b"')]

    result = plan([B, Group("gw", ('"w"',))], existing, max_rules=2)

    assert result.over_cap == []
    assert result.keep == {"9": '"b"'}
    assert result.add == [('"w"', tag("gw", 0))]


def test_a_group_whose_rule_is_already_there_as_a_foreign_rule_is_not_over_cap():
    result = plan([B], [foreign("9", '"b"')], max_rules=1)

    assert result.over_cap == []
    assert result.keep == {"9": '"b"'}


def test_leftovers_of_an_earlier_run_with_the_same_values_are_kept_once():
    existing = [
        ours("1", '"a1"', in_group="ga"),
        ours("2", '"a1"', in_group="ga"),  # a duplicate from a run that crashed mid-way
        ours("3", '"a2"', in_group="ga", index=1),
    ]

    result = plan([A], existing, max_rules=10)

    assert result.keep == {"1": '"a1"', "3": '"a2"'}
    assert result.delete_ids == ["2"]
    assert result.add == []


def test_a_plan_applied_is_stable():
    first = plan([A, B], [foreign("f", '"x"')], max_rules=10)
    applied = [foreign("f", '"x"')] + [
        RemoteRule(f"n{i}", value, rule_tag) for i, (value, rule_tag) in enumerate(first.add)
    ]

    second = plan([A, B], applied, max_rules=10)

    assert second.add == [] and second.delete_ids == []
    assert sorted(second.keep.values()) == ['"a1"', '"a2"', '"b"']


# --- crawlers_by_value ----------------------------------------------------------------------


# --- owned ----------------------------------------------------------------------------------


def test_a_leaving_source_owns_our_rules_of_the_groups_it_served_and_those_it_placed():
    existing = [
        ours("1", '"a1"', in_group="ga"),
        ours("2", '"b"', in_group="gb"),  # another group's: not served here
        ours("3", '"kept"', in_group="earlier"),  # kept by value under an earlier run's tag
        foreign("4", '"a2"'),  # a foreign rule it shared is still not ours
    ]

    assert owned(existing, group_ids={"ga"}, rule_ids={"3", "4"}) == ["1", "3"]


def test_a_source_that_served_nothing_owns_nothing():
    assert owned([ours("1", '"a1"'), foreign("2", '"x"')], group_ids=set(), rule_ids=set()) == []


def test_crawlers_by_value_unites_the_members_of_groups_sharing_a_value():
    groups = {"ga": A, "gs": Group("gs", ('"a1"', '"s"')), "ge": Group("ge", ('"e"',))}
    members = {"ga": {1, 2}, "gs": {3}}

    by_value = crawlers_by_value(groups, members)

    assert by_value == {'"a1"': {1, 2, 3}, '"a2"': {1, 2}, '"s"': {3}, '"e"': set()}
    assert members == {"ga": {1, 2}, "gs": {3}}  # the caller's sets are not changed
