"""Tool calls in plain model text (SPEC M5): the shared corpus, error cases, properties.

The corpus is read from ``shared/corpora/tool_call_formats.jsonl`` beside the
repository; when it is missing the corpus test fails (it never skips).
"""

from __future__ import annotations

import json
import keyword
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gg.errors import UserError
from gg.models.base import ToolCall
from gg.models.parsing import ParsedText, TextFormat, detect_format, parse_tool_calls

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / ".." / "shared" / "corpora" / "tool_call_formats.jsonl"
FORMATS: list[TextFormat] = list(get_args(TextFormat))
MISSING = f"corpus not found at {CORPUS.resolve()}: shared/ must sit beside the repository"

# Every key a case's ``expected`` may carry, and what this test does with it.
ASSERTED = {"tool_calls", "content", "must_not_raise", "peer_raises", "peer_tools_called"}
FOR_TOOL_NAMES = {"tools_available", "tool_schema_param_types", "tool_schema"}
CONTEXT_ONLY = {
    "peer",  # which parser asserted the case
    "peer_status",  # the peer's xfail: gg must pass anyway
    "peer_streaming_chunks",  # checked to join to the input; gg parses whole replies
    "thinking",
    "peer_has_thinking",  # DeepSeek reasoning: gg leaves it in content
}


def _load_cases() -> list[Any]:
    """Corpus cases as params; a missing file is one case that fails loudly."""
    if not CORPUS.is_file():
        return [pytest.param(None, id="corpus-missing")]
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines if line.strip()]
    return [pytest.param(case, id=case["id"]) for case in cases]


def _offered(expected: dict[str, Any]) -> list[str] | None:
    """The offered tool names a case implies (from the peer's tools or schema)."""
    names = expected.get("tools_available") or list(expected.get("tool_schema_param_types") or {})
    return names or None


def _check_invariants(parsed: ParsedText) -> None:
    """What holds for every result, whatever the text."""
    assert isinstance(parsed.content, str)
    assert parsed.content == parsed.content.strip()
    if parsed.error is not None:
        assert parsed.error and parsed.tool_calls == ()
        assert not parsed.error.startswith("gg could not read"), parsed.error
    for call in parsed.tool_calls:
        assert isinstance(call, ToolCall) and call.id
        assert isinstance(call.arguments, dict) or call.parse_error


# --- the corpus ----------------------------------------------------------------------------


def test_corpus_is_beside_the_repo_and_whole() -> None:
    assert CORPUS.is_file(), MISSING
    assert len(_load_cases()) >= 124


@pytest.mark.parametrize("case", _load_cases())
def test_corpus_case(case: dict[str, Any] | None) -> None:
    assert case is not None, MISSING
    expected = case["expected"]
    unknown = set(expected) - ASSERTED - FOR_TOOL_NAMES - CONTEXT_ONLY
    assert not unknown, f"new expected keys, decide what they mean: {unknown}"
    if "peer_streaming_chunks" in expected:
        assert "".join(expected["peer_streaming_chunks"]) == case["input"]

    parsed = parse_tool_calls(case["input"], tool_names=_offered(expected))
    _check_invariants(parsed)

    if expected["tool_calls"] == "unspecified":
        assert expected["must_not_raise"] is True
    else:
        assert [c.name for c in parsed.tool_calls] == [c["name"] for c in expected["tool_calls"]]
        for got, want in zip(parsed.tool_calls, expected["tool_calls"], strict=True):
            if "arguments" in want:
                assert (got.arguments, got.parse_error) == (want["arguments"], None)
            if "arguments_raw" in want:  # the peer kept broken arguments as text: so does gg
                assert got.arguments == want["arguments_raw"] and got.parse_error
            if "id" in want:
                assert got.id == want["id"]
    if "content" in expected:
        assert parsed.content == (expected["content"] or "").strip()
    if expected.get("peer_raises") or expected.get("peer_tools_called"):
        # the peer raised, or claimed a call it could not give: gg says what is wrong
        assert parsed.error


# --- broken calls are error turns that say what was wrong ---------------------------------

BROKEN: list[tuple[str, str]] = [
    ('<tool_call>{"name": "finish", "arguments": {"summary": </tool_call>', "cut off"),
    ('<tool_call>{"name": "finish", "arguments": {summary: 1}}</tool_call>', "not valid JSON"),
    ('<tool_call>{"tool": "finish"}</tool_call>', "not a call"),
    ("<tool_call></tool_call>", "<tool_call> must hold"),
    ('{"name": "finish", "arguments": {"summary": "do', "cut off"),
    ("[TOOL_CALLS] sorry, no", "[TOOL_CALLS] must be followed"),
    ("[TOOL_CALLS]finish", "has no arguments"),
    (
        '[TOOL_CALLS][{"name": "a", "arguments": {}}][TOOL_CALLS][{"name": "b", "arguments": {}}]',
        "appears 2 times",
    ),
    ("[finish(summary='unclosed)]", "not valid Python"),
    ("<|tool_call|> no json here", "holds no call"),
    ("<|python_tag|>x = 1", "not a tool call"),
    ("<|python_tag|><|eom_id|>", "hold no call"),
    ("<｜tool▁call▁begin｜>finish{}<｜tool▁call▁end｜>", "separator"),
]


@pytest.mark.parametrize(("text", "says"), BROKEN)
def test_a_broken_call_is_an_error_that_says_what_was_wrong(text: str, says: str) -> None:
    parsed = parse_tool_calls(text, tool_names=["finish", "a", "b"])
    _check_invariants(parsed)
    assert parsed.tool_calls == ()
    assert parsed.error is not None and says in parsed.error


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[TOOL_CALLS]finish{"summary": "cut', "cut off"),
        ('<tool_call>{"name": "finish", "arguments": [1, 2]}</tool_call>', "must be a JSON object"),
        (
            '<tool_call>{"name": "finish", "arguments": "not json"}</tool_call>',
            "must be a JSON object",
        ),
        ("[finish(summary=open('x'))]", "not literal"),
        ("[finish('positional')]", "name=value"),
        ("<function=finish>\n<parameter=summary>\nhalf a sen", "cut off"),
        ('<|tool_call>call:finish{summary:<|"|>half', "cut off"),
        ('<｜tool▁call▁begin｜>finish<｜tool▁sep｜>{"summary"', "cut off"),
    ],
)
def test_a_named_call_with_unreadable_arguments_keeps_them_raw(text: str, says: str) -> None:
    parsed = parse_tool_calls(text)
    _check_invariants(parsed)
    (call,) = parsed.tool_calls
    assert call.name == "finish" and isinstance(call.arguments, str)
    assert call.parse_error is not None and says in call.parse_error
    assert parsed.error is None


def test_tags_inside_json_strings_do_not_end_the_call() -> None:
    content = "a</tool_call><tool_call>b [TOOL_CALLS] </s>"
    call = json.dumps({"name": "write_file", "arguments": {"content": content}})
    parsed = parse_tool_calls(f"Writing.<tool_call>{call}</tool_call>")
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        ("write_file", {"content": content})
    ]
    assert parsed.content == "Writing."
    mistral = parse_tool_calls('[TOOL_CALLS]write_file{"content": "<s>old</s>"}</s>')
    assert mistral.tool_calls[0].arguments == {"content": "<s>old</s>"}
    assert mistral.content == ""


def test_double_encoded_arguments_are_decoded() -> None:
    text = '<tool_call>{"name": "f", "arguments": "{\\"a\\": [1, {\\"b\\": null}]}"}</tool_call>'
    (call,) = parse_tool_calls(text).tool_calls
    assert call.arguments == {"a": [1, {"b": None}]} and call.parse_error is None


# --- tool_names: what it changes, exactly -------------------------------------------------


def test_tool_names_only_judge_markerless_json() -> None:
    bare = '{"name": "nope", "arguments": {}}'
    assert parse_tool_calls(bare).tool_calls[0].name == "nope"
    refused = parse_tool_calls(bare, tool_names=["finish"])
    assert refused.tool_calls == () and refused.error and "'nope'" in refused.error
    tagged = parse_tool_calls(f"<tool_call>{bare}</tool_call>", tool_names=["finish"])
    assert [c.name for c in tagged.tool_calls] == ["nope"] and tagged.error is None


def test_a_name_only_object_is_a_call_only_to_an_offered_tool() -> None:
    assert parse_tool_calls('{"name": "approve"}').tool_calls == ()
    (call,) = parse_tool_calls('{"name": "approve"}', tool_names=["approve"]).tool_calls
    assert (call.name, call.arguments) == ("approve", {})
    data = parse_tool_calls('{"name": "Ada", "age": 36}', tool_names=["approve"])
    assert data == ParsedText(content='{"name": "Ada", "age": 36}', tool_calls=())


def test_plain_key_value_calls_need_an_offered_name() -> None:
    assert parse_tool_calls("read_file path=README.md").tool_calls == ()
    (call,) = parse_tool_calls("read_file path=README.md", tool_names=["read_file"]).tool_calls
    assert (call.name, call.arguments) == ("read_file", {"path": "README.md"})


# --- prose, thinking, formats ---------------------------------------------------------------


@pytest.mark.parametrize("text", [None, "", "   ", "Just prose.", "for { x() }", "a [1] (b)"])
def test_prose_stays_prose(text: str | None) -> None:
    assert parse_tool_calls(text) == ParsedText(content=(text or "").strip(), tool_calls=())


def test_calls_inside_thinking_are_not_read() -> None:
    text = '<think>maybe <tool_call>{"name": "a", "arguments": {}}</tool_call></think>Done.'
    assert parse_tool_calls(text) == ParsedText(content=text, tool_calls=())


def test_detect_format_takes_the_earliest_marker() -> None:
    assert detect_format('<tool_call>{"name": "a", "arguments": {"x": "[TOOL_CALLS]"}}') == "hermes"
    assert detect_format("<tool_call>\n<function=a>\n</function>") == "qwen"
    assert detect_format("[TOOL_CALLS]a{}") == "mistral"
    assert detect_format('Sure: {"name": "a", "parameters": {}}') == "llama3_json"
    assert detect_format('```json\n[{"name": "a", "arguments": {}}]\n```') == "json"
    assert detect_format("no calls here") is None


def test_an_unknown_format_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown tool-call format 'yaml'"):
        parse_tool_calls("x", format="yaml")  # type: ignore[arg-type]


def test_ids_are_made_up_in_order_unless_the_format_has_them() -> None:
    text = '[TOOL_CALLS][{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]'
    assert [c.id for c in parse_tool_calls(text).tool_calls] == ["call_0", "call_1"]


# --- properties ------------------------------------------------------------------------------

FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[/TOOL_CALLS]",
    "<|tool_call|>",
    "<|python_tag|>",
    "<|python_start|>",
    "<|eom_id|>",
    "<function=f>",
    "<parameter=a>",
    "</parameter>",
    "</function>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<|tool▁output▁begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "call:f{",
    "<escape>",
    '<|"|>',
    "<start_function_call>",
    '<invoke name="f">',
    '<parameter name="a">',
    "<longcat_arg_key>",
    "<think>",
    "</think>",
    "```json",
    "```",
    '{"name": "f", ',
    '"arguments": ',
    '"parameters": ',
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "f(",
    "a=1",
    ",",
    ";",
    ":",
    '"',
    "'",
    "\\",
    "\n",
    " ",
    "true",
    "null",
    "12",
    "-",
    "[f(a=1)]",
]
ANY_FORMAT = st.sampled_from(FORMATS)
NAMES = st.one_of(st.none(), st.lists(st.sampled_from(["f", "g", "finish", "a"]), max_size=3))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=400), fmt=ANY_FORMAT, names=NAMES)
def test_any_text_never_raises(text: str, fmt: TextFormat, names: list[str] | None) -> None:
    _check_invariants(parse_tool_calls(text, format=fmt, tool_names=names))
    detect_format(text, tool_names=names)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=30),
    fmt=ANY_FORMAT,
    names=NAMES,
)
def test_call_like_noise_never_raises(
    parts: list[str], fmt: TextFormat, names: list[str] | None
) -> None:
    _check_invariants(parse_tool_calls("".join(parts), format=fmt, tool_names=names))


# Round trip: calls rendered the way each format writes them parse back, by their
# format and by "auto". Untyped formats (XML-like, k=v, Gemma) read values as JSON
# when they can, so their strings are ones that are not JSON.


def _not_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


WORDS = st.from_regex(r"[A-Za-z][A-Za-z0-9 _.,:;!?'-]{0,12}[A-Za-z0-9]", fullmatch=True)
VALUES = st.one_of(
    st.integers(-(10**12), 10**12),
    st.booleans(),
    WORDS.filter(_not_json),
    st.lists(st.integers(-99, 99), max_size=3),
)
KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: not keyword.iskeyword(k)
)
CALLS = st.lists(st.tuples(KEYS, st.dictionaries(KEYS, VALUES, max_size=4)), min_size=1, max_size=3)
Calls = list[tuple[str, dict[str, Any]]]


def _obj(name: str, args: dict[str, Any], key: str = "arguments") -> str:
    return json.dumps({"name": name, key: args})


def _list(calls: Calls) -> str:
    return json.dumps([{"name": n, "arguments": a} for n, a in calls])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _gemma(value: Any) -> str:
    if isinstance(value, str):
        return f"<escape>{value}<escape>"
    if isinstance(value, list):
        return "[" + ",".join(_gemma(v) for v in value) + "]"
    return json.dumps(value)


RENDER: dict[str, Callable[[Calls], str]] = {
    "hermes": lambda cs: "\n".join(f"<tool_call>{_obj(n, a)}</tool_call>" for n, a in cs),
    "qwen": lambda cs: "".join(
        f"<tool_call>\n<function={n}>\n"
        + "".join(f"<parameter={k}>\n{_text(v)}\n</parameter>\n" for k, v in a.items())
        + "</function>\n</tool_call>"
        for n, a in cs
    ),
    "glm": lambda cs: "".join(
        f"<tool_call>{n}"
        + "".join(f"<arg_key>{k}</arg_key><arg_value>{_text(v)}</arg_value>" for k, v in a.items())
        + "</tool_call>"
        for n, a in cs
    ),
    "mistral": lambda cs: "[TOOL_CALLS]" + _list(cs),
    "mistral_v11": lambda cs: "".join(f"[TOOL_CALLS]{n}{json.dumps(a)}" for n, a in cs),
    "granite": lambda cs: "<|tool_call|>" + _list(cs),
    "llama3_json": lambda cs: "; ".join(_obj(n, a, "parameters") for n, a in cs),
    "json": _list,
    "llama3_python_tag": lambda cs: (
        "<|python_tag|>" + "; ".join(_obj(n, a) for n, a in cs) + "<|eom_id|>"
    ),
    "pythonic": lambda cs: (
        "["
        + ", ".join(f"{n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")" for n, a in cs)
        + "]"
    ),
    "deepseek": lambda cs: (
        "<｜tool▁calls▁begin｜>"
        + "".join(
            f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{json.dumps(a)}<｜tool▁call▁end｜>"
            for n, a in cs
        )
        + "<｜tool▁calls▁end｜>"
    ),
    "kimi_k2": lambda cs: (
        "<|tool_calls_section_begin|>"
        + "".join(
            f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{json.dumps(a)}"
            "<|tool_call_end|>"
            for i, (n, a) in enumerate(cs)
        )
        + "<|tool_calls_section_end|>"
    ),
    "gemma": lambda cs: "".join(
        f"<start_function_call>call:{n}{{"
        + ",".join(f"{k}:{_gemma(v)}" for k, v in a.items())
        + "}<end_function_call>"
        for n, a in cs
    ),
    "minimax": lambda cs: (
        "<minimax:tool_call>\n"
        + "".join(
            f'<invoke name="{n}">\n'
            + "".join(f'<parameter name="{k}">{_text(v)}</parameter>\n' for k, v in a.items())
            + "</invoke>\n"
            for n, a in cs
        )
        + "</minimax:tool_call>"
    ),
    "longcat": lambda cs: "".join(
        f"<longcat_tool_call>{n}\n"
        + "".join(
            f"<longcat_arg_key>{k}</longcat_arg_key>\n<longcat_arg_value>{_text(v)}"
            "</longcat_arg_value>\n"
            for k, v in a.items()
        )
        + "</longcat_tool_call>"
        for n, a in cs
    ),
}


def test_every_format_has_a_round_trip() -> None:
    assert {f.removesuffix("_v11") for f in RENDER} == set(FORMATS) - {"auto"}


@settings(max_examples=40, deadline=None)
@given(calls=CALLS, prose=st.sampled_from(["", "Sure.\n"]))
@pytest.mark.parametrize("style", sorted(RENDER))
def test_rendered_calls_parse_back(style: str, calls: Calls, prose: str) -> None:
    fmt: TextFormat = style.removesuffix("_v11")  # type: ignore[assignment]
    prose = "" if fmt == "pythonic" else prose  # auto reads a pythonic list only as a whole reply
    text = prose + RENDER[style](calls)
    for chosen in (fmt, "auto"):
        parsed = parse_tool_calls(text, format=chosen, tool_names=[n for n, _ in calls])
        _check_invariants(parsed)
        assert parsed.error is None, parsed.error
        assert [(c.name, c.arguments) for c in parsed.tool_calls] == calls
        assert parsed.content == ("" if fmt == "llama3_json" else prose.strip())


@settings(max_examples=300, deadline=None)
@given(calls=CALLS, cut=st.floats(0, 1), style=st.sampled_from(sorted(RENDER)))
def test_truncated_calls_never_raise(calls: Calls, cut: float, style: str) -> None:
    text = RENDER[style](calls)
    truncated = text[: int(len(text) * cut)]
    for chosen in (style.removesuffix("_v11"), "auto"):
        _check_invariants(parse_tool_calls(truncated, format=chosen))  # type: ignore[arg-type]


def test_plain_key_value_round_trip() -> None:
    args = {"path": "docs/a b.md", "n": 3, "flag": True}
    text = "read_file " + " ".join(f"{k}={shlex.quote(_text(v))}" for k, v in args.items())
    (call,) = parse_tool_calls(text, tool_names=["read_file"]).tool_calls
    assert call.arguments == args
