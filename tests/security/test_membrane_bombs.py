"""Membrane bombs (issue 9, item 6): hostile messages and program texts never crash gg.

Real sandbox, real programs, through ``gg.Agent`` in code mode with a scripted
model. Each case plays one hostile first turn: a program that writes raw lines
on the membrane's own fd (fd 3; answers come back on fd 4), bypassing the
SDK, or an SDK call with invalid Unicode, or a pathological program text. It
asserts that turn is a runtime error or an error turn with a clear message,
that the stream is valid JSON lines of valid UTF-8, and that the next turn (a
normal program calling finish) ends the session: gg kept going.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.config import SandboxSettings, Settings
from gg.endings import Language
from gg.testing import ScriptedModel

FINISH = {"python": "gg.session.finish('ok')", "javascript": "await gg.session.finish('ok');"}


def program(source: str) -> gg.Reply:
    return gg.Reply(tool_calls=(gg.ToolCall(name="submit_program", arguments={"program": source}),))


def echo(text: str = "") -> str:
    """Echo the text back."""
    return text


def bad_text() -> str:
    """Return text with a lone surrogate (what os.fsdecode gives for undecodable bytes)."""
    return "caf\udce9 and \ud800"


def deep_value() -> Any:
    """Return a list nested past Python's recursion limit."""
    value: list[Any] = []
    for _ in range(5000):
        value = [value]
    return value


def huge_int() -> int:
    """Return a 5,000-digit integer (past Python's int-to-str limit)."""
    return 10**5000


def play(workspace: Path, lang: Language, first: str, *, wall_s: float = 10) -> tuple[Any, Any]:
    """Run the hostile program, then a normal finish; return (result, model)."""
    model = ScriptedModel([program(first), program(FINISH[lang])])
    settings = Settings(sandbox=SandboxSettings(wall_s=wall_s, cpu_s=wall_s))
    agent = gg.Agent(
        model=model,
        workspace=workspace,
        mode="code",
        language=lang,
        settings=settings,
        tools=[echo, bad_text, deep_value, huge_int],
    )
    return agent.run("survive the bomb"), model


def stream_events(result: Any) -> list[dict[str, Any]]:
    """Every line of the stream: strict UTF-8, one JSON object each."""
    raw = Path(result.stream).read_bytes()
    assert raw.endswith(b"\n")
    events = []
    for line in raw.splitlines():
        events.append(json.loads(line.decode("utf-8")))  # strict: a surrogate would fail here
        assert isinstance(events[-1], dict)
    return events


def first_turn(result: Any, model: Any) -> tuple[str, bool]:
    """(The feedback the model got for turn 1, whether turn 1 was an error turn or failed)."""
    assert result.ending == gg.Finish(summary="ok"), result  # the next turn ran normally
    model.assert_complete()
    feedback = model.calls[1][0][-1].content
    events = stream_events(result)
    errors = [e for e in events if e["type"] == "error_turn"]
    failed = [
        e
        for e in events
        if e["type"] == "tool_result" and e["name"] == "submit_program" and not e["ok"]
    ]
    assert feedback.encode("utf-8")  # valid Unicode into the next prompt
    return feedback, bool(errors or failed)


def assert_survived(result: Any, model: Any, *expected: str) -> str:
    feedback, failed = first_turn(result, model)
    assert failed, feedback
    assert any(e.lower() in feedback.lower() for e in expected), feedback
    return feedback


# ----------------------------------------------------------- raw lines on fd 3 (Python)

_CALL = 'b\'{"id":1,"kind":"tool","name":"echo","arguments":\''
RAW: dict[str, tuple[str, tuple[str, ...]]] = {
    # name -> (a Python expression of the bytes written, words the feedback must hold)
    "5,000-deep array": ("b'[' * 5000 + b']' * 5000 + b'\\n'", ("nested 5000 levels",)),
    "100,000-deep array": ("b'[' * 100_000 + b'\\n'", ("nested 100000 levels",)),
    "100,000-deep object": ("b'{\"a\":' * 100_000 + b'\\n'", ("nested 100000 levels",)),
    "mixed 3,000-deep": ("b'[{\"k\":' * 1500 + b'1' + b'}]' * 1500 + b'\\n'", ("nested",)),
    "deep call arguments": (
        _CALL + " + b'{\"a\":' * 5000 + b'1' + b'}' * 5001 + b'\\n'",
        ("nested", "levels deep"),
    ),
    "5,000-digit integer": (
        'b\'{"kind":"result","returned":null,"error":null,"limit":\' + b\'7\' * 5000 + b\'}\\n\'',
        ("5000 digits",),
    ),
    "999,000-digit integer": ("b'[' + b'9' * 999_000 + b']\\n'", ("999000 digits",)),
    "1,000,000-digit integer": ("b'[' + b'9' * 1_000_000 + b']\\n'", ("longer than",)),
    "big integer in a call": (_CALL + " + b'{\"n\":-' + b'1' * 5000 + b'}}\\n'", ("5000 digits",)),
    "long float": ("b'[0.' + b'5' * 50_000 + b']\\n'", ("characters",)),
    "float out of range": (_CALL + " + b'{\"x\":1e999}}\\n'", ("out of range",)),
    "NaN in a call": (_CALL + " + b'{\"x\":NaN}}\\n'", ("NaN",)),
    "-Infinity": ('b\'{"kind":"result","returned":-Infinity}\\n\'', ("Infinity",)),
    "lone surrogate escape": (_CALL + ' + b\'{"text":"\\\\ud800"}}\\n\'', ("not valid Unicode",)),
    "low surrogate in a key": (_CALL + " + b'{\"\\\\udfff\":1}}\\n'", ("not valid Unicode",)),
    "surrogate in the name": (
        'b\'{"id":1,"kind":"tool","name":"e\\\\udbff","arguments":{}}\\n\'',
        ("not valid Unicode",),
    ),
    "surrogate in a result": (
        'b\'{"kind":"result","returned":"\\\\ud800","error":"\\\\udc00","limit":null}'
        "\\n' + b'[\\n'",
        ("not json", "after its result"),
    ),
    "UTF-8-encoded surrogate": (_CALL + ' + b\'{"text":"\\xed\\xa0\\x80"}}\\n\'', ("not UTF-8",)),
    "invalid UTF-8": ("b'\\xff\\xfe{}\\n'", ("not UTF-8",)),
    "100 MB line": ("b'[' + b'1,' * 50_000_000", ("longer than",)),
    "2 MB valid-looking call": (
        _CALL + " + b'{\"text\":\"' + b'a' * 2_000_000 + b'\"}}\\n'",
        ("longer than",),
    ),
    "not JSON": ("b'rm -rf / please\\n'", ("not JSON",)),
    "truncated JSON": (_CALL + ' + b\'{"text":"abc\\n\'', ("not JSON",)),
    "a JSON array": ("b'[1, 2, 3]\\n'", ("not a JSON object",)),
    "a JSON string": ("b'\"hello\"\\n'", ("not a JSON object",)),
    "a bare number": ("b'12345\\n'", ("not a JSON object",)),
    "empty line": ("b'\\n'", ("not JSON",)),
    "forged compile_error after a call": (
        'b\'{"id":1,"kind":"tool","name":"nope","arguments":{}}\\n\''
        ' + b\'{"kind":"compile_error","message":"x","line":1,"column":1}\\n\'',
        ("compile_error message after",),
    ),
    "cut off": ("b'{\"kind\":'", ("cut off", "not JSON")),
    "flood of calls": (
        'b\'{"id":1,"kind":"tool","name":"nope","arguments":{}}\\n\' * 20_000',
        ("more than 10000 calls", "wall-clock"),
    ),
}

RAW_PROGRAM = """\
import os, select
data = {payload}
view = memoryview(data)
try:
    while view:
        view = view[os.write(3, view):]
except OSError as exc:
    print('write failed:', exc)
answers = b''
enough = data.count(b'\\n') < 10  # one answer; a flood reads on, for gg's call limit
while not (enough and b'\\n' in answers) and select.select([4], [], [], 5)[0]:
    chunk = os.read(4, 1 << 16)
    if not chunk:
        break
    answers += chunk
raise RuntimeError('gg answered: ' + answers[:400].decode('utf-8', 'replace'))
"""


@pytest.mark.parametrize("case", list(RAW))
def test_raw_membrane_line(workspace: Path, case: str) -> None:
    payload, expected = RAW[case]
    result, model = play(workspace, "python", RAW_PROGRAM.format(payload=payload))
    assert_survived(result, model, *expected)


def test_sdk_framed_bad_call_is_answered_in_the_program(workspace: Path) -> None:
    """A call the SDK framed but that breaks a bound is a BadCall the program can catch."""
    source = RAW_PROGRAM.format(payload=_CALL + ' + b\'{"text":"\\\\ud800"}}\\n\'')
    result, model = play(workspace, "python", source)
    feedback = assert_survived(result, model, "gg answered")
    assert '"error_type": "bad_call"' in feedback and '"id": 1' in feedback


def test_strings_that_look_deep_are_not_refused(workspace: Path) -> None:
    """Brackets, quotes and escapes inside strings do not count as nesting."""
    source = "print(gg.tools.echo(text='[' * 50_000 + '\\\\\"{' * 1000 + 'x'))\nprint('echoed')"
    result, model = play(workspace, "python", source)
    feedback, failed = first_turn(result, model)
    assert not failed and "echoed" in feedback, feedback


# ----------------------------------------------------------- raw lines on fd 3 (JavaScript)

JS_RAW: dict[str, tuple[str, tuple[str, ...]]] = {
    "5,000-deep array": ("'['.repeat(5000) + ']'.repeat(5000) + '\\n'", ("nested 5000",)),
    "100,000-deep object": ("'{\"a\":'.repeat(100000) + '\\n'", ("nested 100000",)),
    "5,000-digit integer": ("'[' + '7'.repeat(5000) + ']\\n'", ("5000 digits",)),
    "lone surrogate": ('\'{"kind":"ready","x":"\\\\ud800"}\\n\'', ("second 'ready'",)),
    "100 MB line": ("'['.repeat(100_000_000)", ("longer than",)),
    "not JSON": ("'hello gg\\n'", ("not JSON",)),
    "a JSON array": ("'[{\"id\":1}]\\n'", ("not a JSON object",)),
}

JS_RAW_PROGRAM = """\
const f = Deno.openSync('/dev/fd/3', {{ write: true }});
const data = new TextEncoder().encode({payload});
let offset = 0;
while (offset < data.length) offset += f.writeSync(data.subarray(offset));
await new Promise((resolve) => setTimeout(resolve, 3000));
throw new Error('gg did not stop the program');
"""


@pytest.mark.parametrize("case", list(JS_RAW))
def test_javascript_raw_membrane_line(workspace: Path, case: str) -> None:
    payload, expected = JS_RAW[case]
    result, model = play(workspace, "javascript", JS_RAW_PROGRAM.format(payload=payload))
    assert_survived(result, model, *expected)


# ----------------------------------------------------------- SDK calls, both languages

SDK: dict[str, dict[str, str]] = {
    "surrogate content": {
        "python": "gg.tools.write_file(path='out.txt', content='a\\ud800b')",
        "javascript": "await gg.tools.writeFile({path: 'out.txt', content: 'a\\ud800b'});",
    },
    "surrogate path": {
        "python": "gg.tools.read_file(path='\\udcff.txt')",
        "javascript": "await gg.tools.readFile({path: '\\udcff.txt'});",
    },
    "surrogate in an ending": {
        "python": "gg.session.finish('done \\udfff')",
        "javascript": "await gg.session.finish('done \\udfff');",
    },
    "surrogate in a nested argument": {
        "python": "gg.tools.echo(text=['fine', {'deep': ['\\ud83d']}])",
        "javascript": "await gg.tools.echo({text: ['fine', {deep: ['\\ud83d']}]});",
    },
}


@pytest.mark.parametrize("lang", ["python", "javascript"])
@pytest.mark.parametrize("case", list(SDK))
def test_sdk_call_with_lone_surrogate(workspace: Path, lang: Language, case: str) -> None:
    result, model = play(workspace, lang, SDK[case][lang])
    feedback = assert_survived(result, model, "not valid Unicode")
    assert "BadCall" in feedback
    assert not (workspace / "out.txt").exists()
    declared = [e for e in stream_events(result) if e["type"] == "ending_declared"]
    assert [e["arguments"] for e in declared] == [{"summary": "ok"}]


SDK_BOUNDS: dict[str, dict[str, tuple[str, str]]] = {
    "150-deep argument": {
        "python": ("x = []\nfor _ in range(150):\n    x = [x]\ngg.tools.echo(text=x)", "nested"),
        "javascript": (
            "let x = [];\nfor (let i = 0; i < 150; i++) x = [x];\nawait gg.tools.echo({text: x});",
            "nested",
        ),
    },
    "200-digit integer": {
        "python": ("gg.tools.echo(text=10**200)", "digits"),
        "javascript": ("await gg.tools.echo({text: 10n ** 200n});", "BigInt"),
    },
    "5,000-deep argument": {
        "python": (
            "x = []\nfor _ in range(5000):\n    x = [x]\ngg.tools.echo(text=x)",
            "recursion",
        ),
        "javascript": (
            "let x = [];\nfor (let i = 0; i < 5000; i++) x = [x];\nawait gg.tools.echo({text: x});",
            "nested",
        ),
    },
}


@pytest.mark.parametrize("lang", ["python", "javascript"])
@pytest.mark.parametrize("case", list(SDK_BOUNDS))
def test_sdk_call_past_a_bound(workspace: Path, lang: Language, case: str) -> None:
    source, expected = SDK_BOUNDS[case][lang]
    result, model = play(workspace, lang, source)
    assert_survived(result, model, expected)


# ----------------------------------------------------------- what flows back

BACK: dict[str, dict[str, str]] = {
    "tool returns a lone surrogate": {
        "python": "print(gg.tools.bad_text())\nraise SystemExit(3)",
        "javascript": "console.log(await gg.tools.badText());\nthrow new Error('end');",
    },
    "tool returns a value too deep to send": {
        "python": "gg.tools.deep_value()",
        "javascript": "await gg.tools.deepValue();",
    },
    "tool returns a 5,000-digit integer": {
        "python": "gg.tools.huge_int()",
        "javascript": "await gg.tools.hugeInt();",
    },
    "program raises with a lone surrogate": {
        "python": "raise ValueError('bad \\ud800 text')",
        "javascript": "throw new Error('bad \\ud800 text');",
    },
    "program prints invalid UTF-8": {
        "python": "import os\nos.write(1, b'\\xed\\xa0\\x80 \\xff\\xfe')\nraise SystemExit(2)",
        "javascript": "Deno.stdout.writeSync(new Uint8Array([0xed, 0xa0, 0x80, 0xff]));\n"
        "throw new Error('end');",
    },
}


@pytest.mark.parametrize("lang", ["python", "javascript"])
@pytest.mark.parametrize("case", list(BACK))
def test_text_flowing_back_is_valid_unicode(workspace: Path, lang: Language, case: str) -> None:
    result, model = play(workspace, lang, BACK[case][lang])
    feedback, failed = first_turn(result, model)
    assert failed, feedback
    marks = ("\ufffd", "ToolError: RecursionError", "ToolError: ValueError: Exceeds the limit")
    assert any(mark in feedback for mark in marks), feedback


def test_undecodable_file_name_listed(workspace: Path) -> None:
    (workspace / "caf\udce9.txt").write_bytes(b"\xff\xfe not utf-8")
    source = "print(gg.tools.list_dir(path='.'))\nprint(gg.tools.read_file(path='README.md'))"
    result, model = play(workspace, "python", source)
    feedback, _ = first_turn(result, model)
    assert "demo" in feedback


# ----------------------------------------------------------- pathological programs

PROGRAMS: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "python": {
        "100,000 open parentheses": ("(" * 100_000, ("does not compile",)),
        "deep balanced brackets": ("x = " + "[" * 50_000 + "]" * 50_000, ("does not compile",)),
        "200,000 unary minuses": ("x = " + "-" * 200_000 + "1", ("does not compile",)),
        "200,000 nots": ("x = " + "not " * 200_000 + "1", ("does not compile",)),
        "100,000 lambdas": ("f = " + "lambda: " * 100_000 + "0", ("does not compile",)),
        "deep indentation": (
            "".join(" " * i + "if 1:\n" for i in range(300)) + " " * 300 + "1",
            ("does not compile",),
        ),
        "900,000-digit literal": ("x = " + "9" * 900_000, ("does not compile",)),
        "null byte": ("x = 1\x00", ("does not compile",)),
        "50 MB string literal": ("x = '" + "a" * 50_000_000 + "'", ("was not run", "limit")),
        "2 MB of statements": ("a = 1\n" * 350_000, ("was not run",)),
        "lone surrogate in the text": ("x = '\ud800'", ("not valid Unicode",)),
        "gigabyte at run time": ("x = 'a' * (10 ** 10)", ("memory",)),
    },
    "javascript": {
        "100,000 open parentheses": ("(" * 100_000, ("does not compile",)),
        "deep balanced brackets": (
            "const x = " + "[" * 50_000 + "]" * 50_000 + ";",
            ("does not compile", "failed"),
        ),
        "200,000 unary minuses": ("const x = " + "-" * 200_000 + "1;", ("does not compile",)),
        "50 MB string literal": ("const x = '" + "a" * 50_000_000 + "';", ("was not run",)),
        "2 MB of statements": ("a = 1;\n" * 300_000, ("was not run",)),
        "lone surrogate in the text": ("const x = '\udc00';", ("not valid Unicode",)),
    },
}


@pytest.mark.parametrize(
    ("lang", "case"), [(lang, case) for lang, cases in PROGRAMS.items() for case in cases]
)
def test_pathological_program(workspace: Path, lang: Language, case: str) -> None:
    source, expected = PROGRAMS[lang][case]
    result, model = play(workspace, lang, source)
    assert_survived(result, model, *expected)


@pytest.mark.parametrize("lang", ["python", "javascript"])
def test_large_valid_program_runs(workspace: Path, lang: Language) -> None:
    """Just under the cap, a big literal compiles and runs: the cap is not a false alarm."""
    literal = "a" * 900_000
    source = (
        f"x = '{literal}'\nprint(len(x))"
        if lang == "python"
        else f"const x = '{literal}';\nconsole.log(x.length);"
    )
    result, model = play(workspace, lang, source)
    feedback, failed = first_turn(result, model)
    assert not failed and "900000" in feedback, feedback


def test_program_bytes_is_configurable(workspace: Path) -> None:
    model = ScriptedModel([program("x = 1\n" * 400), program(FINISH["python"])])
    settings = Settings(sandbox=SandboxSettings(program_bytes=2_000))
    result = gg.Agent(
        model=model, workspace=workspace, mode="code", language="python", settings=settings
    ).run("t")
    assert result.ending == gg.Finish(summary="ok")
    assert "2,400 bytes, over gg's limit of 2,000" in model.calls[1][0][-1].content


def test_python_is_never_compiled_in_gg(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The program text never reaches gg's own compiler; errors keep line and column."""
    import builtins

    real = builtins.compile
    seen: list[str] = []

    def watch(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, str | bytes) and "gg-marker-7c1" in str(source):
            seen.append("compiled in gg")
        return real(source, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(builtins, "compile", watch)
        result, model = play(workspace, "python", "x = 1  # gg-marker-7c1\nif x\n    print(x)\n")
    assert seen == []
    feedback = assert_survived(result, model, "does not compile")
    assert "line 2, column 5" in feedback and "SyntaxError" in feedback
    errors = [e for e in stream_events(result) if e["type"] == "error_turn"]
    assert [e["kind"] for e in errors] == ["compile_error"]


def test_forged_result_is_cut(workspace: Path) -> None:
    """A result the program forges (then exits) is shown cut and as valid Unicode."""
    source = (
        "import os\n"
        "err = 'E\\\\ud800' + 'x' * 500_000\n"
        'os.write(3, (\'{"kind":"result","returned":null,"error":"\' + err + '
        '\'","limit":null}\\n\').encode())\n'
        "os._exit(1)\n"
    )
    result, model = play(workspace, "python", source)
    feedback = assert_survived(result, model, "characters cut")
    assert len(feedback) < 30_000 and "E\ufffd" in feedback


def test_flood_without_reading_answers_is_stopped_by_the_clock(workspace: Path) -> None:
    source = (
        "import os\n"
        'line = b\'{"id":1,"kind":"tool","name":"nope","arguments":{}}\\n\'\n'
        "while True:\n    os.write(3, line * 100)\n"
    )
    result, model = play(workspace, "python", source, wall_s=3)
    assert_survived(result, model, "wall-clock limit", "more than 10000 calls")


async def test_messages_per_program_are_bounded(tmp_path: Path) -> None:
    """``Limits.membrane_bytes`` bounds all messages of one program together."""
    from gg.sandbox import CallAnswer, CallRequest, Limits, Sandbox

    async def answer(request: CallRequest) -> CallAnswer:
        return CallAnswer(ok=True, value=len(request.arguments.get("text", "")))

    spec = gg.ToolSpec(
        name="echo",
        description="Echo.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )
    sandbox = Sandbox(limits=Limits(membrane_bytes=300_000, wall_s=10))
    source = "for i in range(100):\n    gg.tools.echo(text='x' * 10_000)\n"
    result = await sandbox.run(
        source, language="python", workspace=tmp_path, tools=[spec], handler=answer
    )
    assert result.limit == "membrane" and result.calls < 35, result
    assert "more than 300000 bytes of messages" in (result.error or "")
    again = await sandbox.run(
        "gg.tools.echo(text='y')",
        language="python",
        workspace=tmp_path,
        tools=[spec],
        handler=answer,
    )
    assert again.error is None and again.calls == 1
