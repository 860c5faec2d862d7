"""The ending protocol in isolation (SPEC S2, S3, S4, S8, S9, S13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gg.endings import (
    Approve,
    Declarations,
    Ending,
    Finish,
    Refusal,
    RequestChanges,
    Role,
    check_ending,
    ending_from_record,
    ending_group,
    ending_tool_specs,
)
from gg.hooks import StopEvent
from gg.stream import SessionEnded, parse_event

blank = st.text(alphabet=" \t\n\r\f\v", max_size=12)


def test_groups_are_the_roles_own() -> None:
    assert ending_group(Role.STANDARD) == ("finish",)
    assert ending_group(Role.REVIEW) == ("approve", "request_changes")
    assert ending_group(None) == ()
    assert [s["name"] for s in ending_tool_specs(Role.STANDARD)] == ["finish"]
    assert [s["name"] for s in ending_tool_specs(Role.REVIEW)] == ["approve", "request_changes"]


def test_role_is_checked_before_shape() -> None:
    # S3: an implementer's request_changes([]) is refused as unavailable, not as a bad shape.
    r = check_ending("request_changes", {"items": []}, role=Role.STANDARD)
    assert isinstance(r, Refusal) and r.reason == "unavailable"
    assert "not the one to give verdicts" in r.message
    assert "finish(summary)" in r.message


def test_reviewer_finish_names_its_endings() -> None:
    r = check_ending("finish", {"summary": ""}, role=Role.REVIEW)
    assert isinstance(r, Refusal) and r.reason == "unavailable"
    assert "approve()" in r.message and "request_changes(items)" in r.message


def test_javascript_spelling_in_messages() -> None:
    r = check_ending("finish", {"summary": "x"}, role=Role.REVIEW, language="javascript")
    assert isinstance(r, Refusal) and "requestChanges(items)" in r.message
    ok = check_ending("requestChanges", {"items": ["a"]}, role=Role.REVIEW)
    assert ok == RequestChanges(items=("a",))


def test_on_use_script_has_no_group() -> None:
    for call in ("finish", "approve", "request_changes"):
        r = check_ending(
            call, {"summary": "x", "items": ["x"]} if call != "approve" else {}, role=None
        )
        assert isinstance(r, Refusal) and r.reason == "unavailable"
        assert "on-use scripts cannot end a session" in r.message


def test_not_an_ending_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="not an ending call"):
        check_ending("read_file", {}, role=Role.STANDARD)


@given(blank)
def test_blank_summary_is_refused(summary: str) -> None:
    r = check_ending("finish", {"summary": summary}, role=Role.STANDARD)
    assert isinstance(r, Refusal) and r.reason == "shape"
    assert 'finish(summary="' in r.message  # says what to send instead


@given(blank, st.text(min_size=1).filter(lambda s: s.strip()), blank)
def test_summary_is_trimmed(pre: str, core: str, post: str) -> None:
    r = check_ending("finish", {"summary": pre + core + post}, role=Role.STANDARD)
    assert r == Finish(summary=(pre + core + post).strip())


@given(st.lists(st.one_of(blank, st.text(max_size=20)), max_size=8))
def test_items_are_trimmed_and_blanks_dropped(items: list[str]) -> None:
    r = check_ending("request_changes", {"items": items}, role=Role.REVIEW)
    kept = [i.strip() for i in items if i.strip()]
    if kept:
        assert r == RequestChanges(items=tuple(kept))
    else:
        assert isinstance(r, Refusal) and r.reason == "shape"
        assert "at least one non-blank item" in r.message


def test_padded_items_example() -> None:
    r = check_ending("request_changes", {"items": ["  ", " fix x "]}, role=Role.REVIEW)
    assert r == RequestChanges(items=("fix x",))


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("approve", {"items": ["fix the bug"]}),
        ("finish", {"summary": 3}),
        ("request_changes", {"items": "x"}),
        ("finish", {}),
        ("request_changes", {"items": [1]}),
    ],
)
def test_bad_shapes(call: str, args: dict[str, object]) -> None:
    role = Role.STANDARD if call == "finish" else Role.REVIEW
    r = check_ending(call, args, role=role)
    assert isinstance(r, Refusal) and r.reason == "shape" and "Instead" in r.message


def test_approve_takes_nothing() -> None:
    assert check_ending("approve", None, role=Role.REVIEW) == Approve()


def test_declarations_last_wins_and_revoke() -> None:
    d = Declarations()
    assert d.current is None and d.superseded == 0
    d.declare(Finish(summary="a"))
    d.declare(Finish(summary="b"))
    d.declare(Finish(summary="c"))
    assert d.current == Finish(summary="c") and d.superseded == 2
    assert d.revoke() == Finish(summary="c")
    assert d.current is None and d.revoked == Finish(summary="c")


# ---------------------------------------------------------------- the ending record

endings = st.one_of(
    st.builds(Finish, summary=st.text(min_size=1).map(str.strip).filter(bool)),
    st.just(Approve()),
    st.builds(
        RequestChanges,
        items=st.lists(st.text(min_size=1).map(str.strip).filter(bool), min_size=1).map(tuple),
    ),
)


@given(endings)
def test_an_ending_record_round_trips(ending: Ending) -> None:
    # The record is what the stream, the hook's stdin, --json and the board store hold:
    # through JSON text and back it is the same typed ending.
    record = ending.record()
    assert record["call"] == ending.call
    assert {k: v for k, v in record.items() if k != "call"} == ending.arguments()
    assert ending_from_record(record) == ending
    assert ending_from_record(json.loads(json.dumps(record))) == ending


def test_records_are_the_spec_objects() -> None:
    assert Finish(summary="did it").record() == {"call": "finish", "summary": "did it"}
    assert Approve().record() == {"call": "approve"}
    assert RequestChanges(items=("a", "b")).record() == {
        "call": "request_changes",
        "items": ["a", "b"],
    }
    assert ending_from_record({"call": "requestChanges", "items": [" a "]}) == RequestChanges(
        items=("a",)
    )


@pytest.mark.parametrize(
    "record",
    [
        {},
        {"call": "submit_program"},
        {"call": 3},
        {"call": "finish"},
        {"call": "finish", "summary": "  "},
        {"call": "approve", "items": ["x"]},
        {"call": "request_changes", "items": []},
    ],
)
def test_a_bad_record_is_refused(record: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="not an ending record"):
        ending_from_record(record)


@given(endings)
def test_every_place_holds_the_same_record(ending: Ending) -> None:
    event = StopEvent.for_ending(ending, role=Role.STANDARD, session_id="s1", workspace=Path("/w"))
    assert event.as_json()["ending"] == ending.record()
    ended = SessionEnded(run_id="r", ending=ending.record(), turns=1)
    parsed = parse_event(ended.model_dump_json())
    assert isinstance(parsed, SessionEnded) and parsed.ending == ending.record()
