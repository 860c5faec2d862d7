"""The two events of a program's call are built and redacted on a fast path (issue 11 item 3).

``ToolCalled.of`` / ``ToolResult.of`` skip pydantic's per-field defaults and the
stream's :class:`gg.text.Redactor` prepares its secrets once: both must give exactly
what the slow path gives, the same event, the same JSON bytes, the same redaction.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gg.ceilings import Budget, Ceilings, SessionCeilings
from gg.checkpoint import make_checkpoint, message_from_record
from gg.models.base import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from gg.seal import Altered, Checker, Intact
from gg.stream import (
    Checkpoint,
    EventIds,
    RunEnded,
    RunStarted,
    StreamWriter,
    ToolCalled,
    ToolResult,
    parse_event,
    read_events,
    verify,
)
from gg.text import (
    _SHAPE,
    _SHAPE_HINTS,
    _SHAPE_HINTS_ANY_CASE,
    SECRET_SHAPES,
    Redactor,
    _shape_replacement,
    redact,
)

_IDS: list[EventIds] = [
    EventIds(run_id="r-1", session_id="s-1", turn=3),
    EventIds(run_id="r-ü\u2028", session_id=None, turn=None),
]
_ARGS: list[dict[str, Any] | str] = [
    {"path": "a.txt", "content": 'x\n"y"\\ \ud800 ☃', "n": 10**30, "f": 1.5, "l": [1, None]},
    "not json {",
    {},
]


@pytest.mark.parametrize("ids", _IDS)
@pytest.mark.parametrize("arguments", _ARGS)
def test_a_fast_call_event_is_the_constructed_one(ids: EventIds, arguments: Any) -> None:
    fast = ToolCalled.of(ids, "write_file", arguments)
    slow = ToolCalled.model_construct(**ids, name="write_file", arguments=arguments, at=fast.at)
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set - {"at"}
    try:
        line = slow.model_dump_json()
    except ValueError:  # a lone surrogate: both fail alike (the writer's fallback path)
        with pytest.raises(ValueError):
            fast.model_dump_json()
        return
    assert fast.model_dump_json() == line
    assert parse_event(line) == ToolCalled(
        **ids, name="write_file", arguments=arguments, at=fast.at
    )


@pytest.mark.parametrize("ids", _IDS)
@pytest.mark.parametrize("ok", [True, False])
def test_a_fast_result_event_is_the_validated_one(ids: EventIds, ok: bool) -> None:
    fast = ToolResult.of(ids, "read_file", ok, 'some "text"\n')
    full = ToolResult(**ids, name="read_file", ok=ok, excerpt='some "text"\n', at=fast.at)
    assert fast == full
    assert fast.model_dump_json() == full.model_dump_json()
    assert fast.model_dump() == full.model_dump()


def _texts() -> list[str]:
    rng = random.Random(11)
    alphabet = string.ascii_letters + string.digits + "_-:/\"'= \\\n.{}"
    texts = ["", "plain text", "sk-", "Authorization: Bearer abcdefghijklmnopqrstu"]
    for _ in range(300):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120))))
    prefixes = ["sk-proj-", "ghp_", "AKIA", "xoxb-1-", "eyJ", "hf_", "://u:", "bearer ", "AIza"]
    for p in prefixes:
        texts.append(
            f'{{"x":"{p}{"".join(rng.choice(string.ascii_letters + "09") for _ in range(50))}@h"}}'
        )
    return texts


@pytest.mark.parametrize("secrets", [(), ["env-secret-value-1", 'q"uo\\te-secret'], None])
def test_a_redactor_redacts_exactly_as_redact(
    secrets: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_API_TOKEN", "token-from-the-env-42")
    redactor = Redactor(secrets)
    for text in [
        *_texts(),
        'has env-secret-value-1 and token-from-the-env-42 and q\\"uo\\\\te-secret',
    ]:
        assert redactor(text) == redact(text, secrets)
    assert len(SECRET_SHAPES) > 10


def test_a_programs_call_events_are_sealed_and_redacted(tmp_path: Path) -> None:
    """Written through the fast path, the events still verify and carry no secret."""
    path = tmp_path / "stream.jsonl"
    writer = StreamWriter(path)
    writer.emit(RunStarted(run_id="r-1", settings={}, isolation="none", workspace="/w"))
    key = "ghp_" + "A1b2" * 9
    writer.emit(ToolCalled.of(_IDS[0], "run", {"cmd": f"echo {key}"}))
    writer.emit(ToolResult.of(_IDS[0], "run", True, key))
    writer.emit(RunEnded(run_id="r-1", status="ended", exit_code=0))
    writer.close()
    text = path.read_text()
    assert key not in text and text.count("[redacted]") == 2
    events = list(read_events(path, check=Checker(path, seal_dir=tmp_path)))
    assert [e.type for e in events] == ["run_started", "tool_call", "tool_result", "run_ended"]
    assert isinstance(verify(path, seal_dir=tmp_path), Intact)
    path.write_text(text.replace('"ok":true', '"ok":false'))
    assert isinstance(verify(path, seal_dir=tmp_path), Altered)


def test_the_prefilter_never_changes_what_is_redacted() -> None:
    """Text the hints let through unscanned is text the full scan leaves unchanged."""
    redactor = Redactor(())
    samples = [*_texts(), *(f"x {hint}{'Ab1' * 20} y" for hint in _SHAPE_HINTS)]
    samples += [f"{h.upper()}: Bearer {'Zz9' * 8}" for h in _SHAPE_HINTS_ANY_CASE]
    for text in samples:
        assert redactor(text) == _SHAPE.sub(_shape_replacement, text)
    assert redactor(f"AKIA{'B' * 16}") == "[redacted]"
    assert redactor(f"ghp_{'c' * 36}") == "[redacted]"


_PIECES = st.sampled_from(
    [
        *_SHAPE_HINTS,
        *_SHAPE_HINTS_ANY_CASE,
        *(h.upper() for h in _SHAPE_HINTS_ANY_CASE),
        *(h.title() for h in _SHAPE_HINTS_ANY_CASE),
        "Ab1" * 8, "Zz9" * 6, "cafe0123" * 3, " ", ": ", "=", '"', "'", "\\", "\n", "@h",
        f": Bearer {'Zz9' * 6}", f"={'Ab1' * 6}", f"://u:{'pw9' * 3}@h",
        "task", "right", "global", "A", "k", "K",  # the guards' false hits
        "\u212a", "\u0130", "\u017f", "\ufb00", "\xdf", "\u2028", "\ud800",  # case traps
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=14))
def test_the_hint_scan_never_skips_text_the_full_scan_would_change(parts: list[str]) -> None:
    """ASCII text takes one RE2 scan of every hint, other text the substring tests: either
    way the result is the full scan's (a text is skipped only when no shape can match)."""
    text = "".join(parts)
    assert Redactor(())(text) == _SHAPE.sub(_shape_replacement, text)


_SECRETS = st.lists(
    st.one_of(
        st.sampled_from(["env-secret-value-1", 'q"uo\\te-secret', "sk-proj-" + "Ab1" * 8,
                         "pässwörd-123", "short", "tab\tsecret99"]),
        st.text(min_size=8, max_size=12),
    ),
    max_size=4,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_SECRETS, st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=10), st.randoms())
def test_a_redactor_replaces_every_value_then_every_shape(
    secrets: list[str], parts: list[str], rng: random.Random
) -> None:
    """Whatever the values and the text (values in it whole, JSON-escaped or cut): each value
    replaced longest first, then the full shape scan, as if no prefilter existed."""
    redactor = Redactor(secrets)
    for value in redactor.values:
        parts.insert(rng.randint(0, len(parts)), value[: rng.choice([len(value), 5])])
    text = "".join(parts)
    expected = text
    for value in redactor.values:
        expected = expected.replace(value, "[redacted]")
    assert redactor(text) == _SHAPE.sub(_shape_replacement, expected)


@pytest.mark.parametrize("ids", _IDS)
def test_a_fast_checkpoint_is_the_validated_one(ids: EventIds) -> None:
    """A turn's checkpoint as gg builds it (messages, counts, budget): the same event and
    the same stream line as the validated one."""
    limits = Ceilings(max_tokens=1000)
    budget = Budget(limits)
    budget.add(tokens=12, cost=0.25)
    messages: list[Message] = [
        SystemMessage(content="sys"),
        UserMessage(content="do it \u2028 ☃"),
        AssistantMessage(
            content="", tool_calls=(ToolCall(name="read_file", arguments={"path": "a"}, id="c1"),)
        ),
        ToolMessage(call_id="c1", name="read_file", content="x" * 60_000),
    ]
    fast = make_checkpoint(
        ids, messages, ceilings=SessionCeilings(limits), blocked_total=2, budget=budget,
        progress={"repeats": [["read_file", 1]]},
    )  # fmt: skip
    full = Checkpoint(
        **ids, messages=fast.messages, counts=fast.counts, budget=fast.budget, at=fast.at
    )
    assert fast == full
    assert fast.model_dump_json() == full.model_dump_json()
    assert parse_event(fast.model_dump_json()) == full
    assert [message_from_record(r) for r in fast.messages][:3] == messages[:3]
