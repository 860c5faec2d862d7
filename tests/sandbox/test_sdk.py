"""The generated SDKs (SPEC M2, S2, S3, S8): shapes, and calls through the real membrane."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
from typing import Any

import pytest
from sandbox_support import Arena, Recorder

from gg.models.base import ToolSpec
from gg.sandbox import Sandbox, sdk_signatures, sdk_source

READ = ToolSpec(
    name="read_file",
    description="Read a file in the workspace.\n\nMore text.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Relative path."}},
        "required": ["path"],
    },
)
RUN = ToolSpec(
    name="run_command",
    description="Run a shell command.",
    parameters={
        "type": "object",
        "properties": {
            "timeout_s": {"type": "number", "default": 60},
            "command": {"type": "string"},
            "env": {"type": "object"},
        },
        "required": ["command"],
    },
)
ODD = ToolSpec(
    name="search-text",
    description='Has """ and */ in it; print("injected")',
    parameters={"type": "object", "properties": {"class": {"type": "string"}}},
)
FAIL = ToolSpec(name="fail", description="Always fails.", parameters={"type": "object"})
TOOLS = [READ, RUN, ODD, FAIL]


def test_python_sdk_declares_tools_and_all_three_endings() -> None:
    source = sdk_source([], language="python")
    for call in ("def finish", "def approve", "def request_changes"):
        assert call in source
    full = sdk_source(TOOLS, language="python")
    namespace: dict[str, Any] = {"_transport": lambda *call: {"ok": True, "value": call}}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(full, "<sdk>", "exec"), namespace)
    assert printed.getvalue() == ""  # a description is text, never code
    tools = namespace["tools"]
    assert tools.search_text.__doc__.startswith('Has """ and */ in it; print("injected")')
    assert tools.search_text(class_="x") == ("tool", "search-text", {"class": "x"})
    assert tools.search_text() == ("tool", "search-text", {})  # optional: left out
    assert tools.run_command("ls") == ("tool", "run_command", {"command": "ls", "timeout_s": 60})
    session = namespace["session"]
    assert session.request_changes(["a"]) is None
    with pytest.raises(TypeError):
        tools.read_file()


def test_javascript_sdk_declares_tools_and_all_three_endings() -> None:
    source = sdk_source(TOOLS, language="javascript")
    for name in (
        '"readFile"',
        '"runCommand"',
        '"searchText"',
        '"finish"',
        '"approve"',
        '"requestChanges"',
    ):
        assert name in source
    assert "*/" not in source


def test_signatures_for_the_prompt() -> None:
    py = sdk_signatures(TOOLS, language="python").splitlines()
    assert 'gg.tools.read_file(path="<path>")  # Read a file in the workspace.' in py
    assert any(
        line.startswith('gg.tools.run_command(command="<command>")')
        and "(optional: timeout_s=60" in line
        for line in py
    )
    assert 'gg.session.request_changes(items=["<a change the implementer must make>"])' in (
        "\n".join(py)
    )
    js = sdk_signatures(TOOLS, language="javascript").splitlines()
    assert 'await gg.tools.readFile({path: "<path>"})  // Read a file in the workspace.' in js
    assert any(line.startswith('await gg.session.requestChanges(["') for line in js)
    with pytest.raises(ValueError):
        sdk_signatures(TOOLS, language="ruby")  # type: ignore[arg-type]


PY_PROGRAM = """
import gg as imported
assert imported is gg
print(gg.tools.read_file("a.txt")["arguments"])
print(gg.tools.read_file(path="b.txt")["arguments"])
print(gg.tools.run_command("ls")["arguments"])
gg.session.finish("first")
print("after finish: the program runs on")
try:
    gg.session.approve()
except gg.EndingRefused as exc:
    print("refused:", exc)
try:
    gg.tools.fail()
except gg.ToolError as exc:
    print("tool error:", exc)
try:
    gg._invoke("tool", "not_offered", {})
except gg.BadCall as exc:
    print("bad call:", exc)
try:
    gg.tools.read_file(path=object())
except TypeError as exc:
    print("not JSON:", type(exc).__name__)
gg.session.finish(summary="second")
print(isinstance(gg.EndingRefused("x"), gg.CallError))
"""


async def test_python_program_calls_through_the_membrane(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    recorder = Recorder(refuse=("approve",))
    result = await default_sandbox.run(
        PY_PROGRAM, language="python", workspace=arena.workspace, tools=TOOLS, handler=recorder
    )
    assert result.error is None, result
    assert result.output.splitlines() == [
        "{'path': 'a.txt'}",
        "{'path': 'b.txt'}",
        "{'command': 'ls', 'timeout_s': 60}",
        "after finish: the program runs on",
        "refused: approve is not available",
        "tool error: the tool failed on purpose",
        "bad call: gg has no tool named 'not_offered'; the tools are: "
        "fail, read_file, run_command, search-text",
        "not JSON: TypeError",
        "True",
    ]
    assert [(c.kind, c.name) for c in recorder.calls] == [
        ("tool", "read_file"), ("tool", "read_file"), ("tool", "run_command"),
        ("ending", "finish"), ("ending", "approve"), ("tool", "fail"), ("ending", "finish"),
    ]  # fmt: skip
    assert recorder.calls[-1].arguments == {"summary": "second"}
    assert result.calls == 8


async def test_python_refusal_not_caught_is_the_program_error(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    recorder = Recorder(refuse=("request_changes",))
    program = "gg.session.request_changes([])\nprint('never')\n"
    result = await default_sandbox.run(
        program, language="python", workspace=arena.workspace, tools=[], handler=recorder
    )
    assert (
        result.error is not None
        and "EndingRefused: request_changes is not available" in result.error
    )
    assert 'File "<program>", line 1' in result.error
    assert "gg sdk" not in result.error and "runner" not in result.error
    assert result.output == ""
    assert recorder.calls[0].arguments == {"items": []}


async def test_python_raise_after_declaring_is_reported(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    recorder = Recorder()
    program = "gg.session.finish('done')\nraise RuntimeError('checks failed')\n"
    result = await default_sandbox.run(
        program, language="python", workspace=arena.workspace, tools=[], handler=recorder
    )
    assert [c.name for c in recorder.calls] == ["finish"]
    assert result.error is not None and "RuntimeError: checks failed" in result.error


async def test_python_final_expression_is_returned(default_sandbox: Sandbox, arena: Arena) -> None:
    result = await default_sandbox.run(
        "x = 20\nx * 2 + 2",
        language="python",
        workspace=arena.workspace,
        tools=[],
        handler=Recorder(),
    )
    assert (result.returned, result.error) == ("42", None)
    result = await default_sandbox.run(
        "print('no value')",
        language="python",
        workspace=arena.workspace,
        tools=[],
        handler=Recorder(),
    )
    assert result.returned is None


JS_PROGRAM = """
console.log(JSON.stringify((await gg.tools.readFile({path: "a.txt"})).arguments));
console.log(JSON.stringify((await gg.tools.readFile("b.txt")).arguments));
console.log(JSON.stringify((await gg.tools.runCommand({command: "ls", timeoutS: 5})).arguments));
await gg.session.finish("first");
console.log("after finish: the program runs on");
try { await gg.session.approve(); } catch (e) {
  console.log("refused:", e instanceof gg.EndingRefused, e instanceof gg.CallError, e.message);
}
try { await gg.tools.fail(); } catch (e) { console.log("tool error:", e.name, e.message); }
const both = await Promise.all([gg.tools.readFile("c"), gg.tools.readFile("d")]);
console.log(both.map((r) => r.arguments.path).join(","));
await gg.session.requestChanges(["fix it", "  "]);
export default {calls: 8};
"""


async def test_javascript_program_calls_through_the_membrane(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    recorder = Recorder(refuse=("approve",))
    result = await default_sandbox.run(
        JS_PROGRAM, language="javascript", workspace=arena.workspace, tools=TOOLS, handler=recorder
    )
    assert result.error is None, result
    assert result.output.splitlines() == [
        '{"path":"a.txt"}',
        '{"path":"b.txt"}',
        '{"command":"ls","timeout_s":5}',
        "after finish: the program runs on",
        "refused: true true approve is not available",
        "tool error: ToolError the tool failed on purpose",
        "c,d",
    ]
    assert [(c.kind, c.name) for c in recorder.calls][-1] == ("ending", "request_changes")
    assert recorder.calls[-1].arguments == {"items": ["fix it", "  "]}
    assert result.returned == "{ calls: 8 }"


async def test_javascript_unawaited_refusal_is_the_program_error(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    recorder = Recorder(refuse=("finish",))
    program = 'gg.session.finish("not awaited");\nconsole.log("ran on");\n'
    result = await default_sandbox.run(
        program, language="javascript", workspace=arena.workspace, tools=[], handler=recorder
    )
    assert [c.name for c in recorder.calls] == ["finish"]
    assert result.output == "ran on\n"
    assert result.error is not None and "finish is not available" in result.error


async def test_javascript_throw_after_declaring_is_reported(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    program = 'await gg.session.finish("done");\nthrow new Error("checks failed");\n'
    result = await default_sandbox.run(
        program, language="javascript", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert result.error is not None and "Error: checks failed" in result.error
    assert "program.js:2" in result.error


async def test_handler_time_does_not_count_against_the_wall_clock(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    import asyncio

    from gg.sandbox import CallAnswer, CallRequest

    async def slow(request: CallRequest) -> CallAnswer:
        await asyncio.sleep(1.2)
        return CallAnswer(ok=True, value=1)

    program = "total = sum(gg.tools.read_file('x') for _ in range(3))\ntotal"
    result = await default_sandbox.run(
        program, language="python", workspace=arena.workspace, tools=[READ], handler=slow
    )
    assert default_sandbox.limits.wall_s < result.seconds
    assert (result.returned, result.error) == ("3", None)


async def test_a_handler_bug_stops_the_program_and_propagates(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    from gg.sandbox import CallAnswer, CallRequest

    async def broken(request: CallRequest) -> CallAnswer:
        raise KeyError("bug in gg")

    with pytest.raises(KeyError, match="bug in gg"):
        await default_sandbox.run(
            f"gg.tools.read_file('x')\nimport time\ntime.sleep(60)\n# {arena.marker}",
            language="python", workspace=arena.workspace, tools=[READ], handler=broken,
        )  # fmt: skip
    again = await default_sandbox.run(
        "print('alive')", language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert again.output == "alive\n"


async def test_concurrent_programs_each_get_their_own_process(
    default_sandbox: Sandbox, arena: Arena
) -> None:
    import asyncio

    # each waits (up to 20 s) until all four run at once: a warm start is quick enough that
    # unsynchronised programs could each end before the next begins
    box = Sandbox(limits=dataclasses.replace(default_sandbox.limits, wall_s=30))
    program = (
        "import os, time\nopen(f'started-{os.getpid()}-{time.monotonic_ns()}', 'w').close()\n"
        "deadline = time.monotonic() + 20\n"
        "while len([n for n in os.listdir('.') if n.startswith('started-')]) < 4:\n"
        "    assert time.monotonic() < deadline, 'the four programs never ran at once'\n"
        "    time.sleep(0.005)\n"
        "os.getuid()"
    )
    results = await asyncio.gather(*(
        box.run(program, language="python", workspace=arena.workspace, tools=[], handler=Recorder())
        for _ in range(4)
    ))  # fmt: skip
    assert all(r.error is None for r in results), results
    uids = {r.returned for r in results}
    if os.geteuid() == 0:
        assert len(uids) == 4  # one slot uid each


def test_an_sdk_made_once_does_not_follow_a_schema_changed_later() -> None:
    """The SDK of a tool list is made once and kept; a caller's schema changed in place
    afterwards changes neither what was made nor an equal, untouched list's SDK."""

    def schema(kind: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"x": {"type": kind}}, "required": ["x"]}

    spec = ToolSpec(name="m", description="m", parameters=schema("string"))
    first = sdk_signatures([spec], language="python")
    spec.parameters["properties"]["x"]["type"] = "integer"  # in place
    untouched = ToolSpec(name="m", description="m", parameters=schema("string"))
    assert sdk_signatures([untouched], language="python") == first
    assert 'x="<x>"' in first
    changed = sdk_signatures([spec], language="python")  # its new repr: made anew
    assert "x=0" in changed
