"""Change reports: a poll with the last applied cursor gets only what changed after it."""

from __future__ import annotations

from blackwidow.node_protocol import Cursor
from spawn.report import ChangeLog


def test_the_first_report_is_full_and_a_quiet_one_is_empty() -> None:
    log = ChangeLog()
    first = log.report({1: "a", 2: "b"}, None)
    assert (first.full, sorted(first.changed)) == (True, ["a", "b"])

    quiet = log.report({1: "a", 2: "b"}, first.cursor)

    assert (quiet.full, quiet.changed, quiet.removed, quiet.cursor) == (
        False,
        [],
        [],
        first.cursor,
    )


def test_changes_and_removals_since_a_cursor_survive_a_lost_answer() -> None:
    log = ChangeLog()
    base = log.report({1: "a", 2: "b"}, None).cursor
    lost = log.report({1: "a2", 3: "c"}, base)
    assert (sorted(lost.changed), lost.removed) == (["a2", "c"], [2])

    again = log.report({1: "a2", 3: "c"}, base)  # the hub never applied `lost`

    assert (sorted(again.changed), again.removed) == (["a2", "c"], [2])
    applied = log.report({1: "a2", 3: "c"}, again.cursor)
    assert (applied.changed, applied.removed) == ([], [])


def test_a_cursor_the_log_cannot_answer_gets_everything() -> None:
    log = ChangeLog()
    first = log.report({1: "a"}, None).cursor
    second = log.report({}, first).cursor
    log.report({}, second)  # removals up to `second` are forgotten

    for cursor in (first, Cursor("another-stream", second.seq), Cursor(log.stream, 99)):
        answer = log.report({5: "e"}, cursor)
        assert answer.full and answer.changed == ["e"]


def test_an_entry_removed_and_back_is_reported_changed_not_removed() -> None:
    log = ChangeLog()
    base = log.report({1: "a"}, None).cursor
    log.report({}, None)
    answer = log.report({1: "a"}, base)
    assert (answer.changed, answer.removed) == (["a"], [])
