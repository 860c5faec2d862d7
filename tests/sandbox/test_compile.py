"""Compile errors carry the compiler's own message with line and column (SPEC S5)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gg.sandbox import CallAnswer, CallRequest, ProgramResult, Sandbox


def test_python_syntax_error(default_sandbox: Sandbox) -> None:
    problem = default_sandbox.compile("x = 1\nif x\n    print(x)\n", language="python")
    assert problem is not None
    assert (problem.line, problem.column) == (2, 5)
    assert "SyntaxError" in problem.message and 'File "<program>", line 2' in problem.message


def test_python_compiles_and_null_bytes(default_sandbox: Sandbox) -> None:
    assert default_sandbox.compile("print(1)\nawait_ = 2\n", language="python") is None
    problem = default_sandbox.compile("a = 5\x00", language="python")
    assert problem is not None and "null" in problem.message


def test_javascript_syntax_error(default_sandbox: Sandbox) -> None:
    problem = default_sandbox.compile("const a = 1;\nlet x = ;\n", language="javascript")
    assert problem is not None
    assert (problem.line, problem.column) == (2, 9)
    assert "program.js:2:9" in problem.message and "file://" not in problem.message


def test_javascript_compile_does_not_run_the_program(default_sandbox: Sandbox) -> None:
    started = time.monotonic()
    program = 'import { join } from "node:path";\nwhile (true) {}\nawait gg.tools.x();\n'
    assert default_sandbox.compile(program, language="javascript") is None
    assert time.monotonic() - started < 10


async def test_acompile(default_sandbox: Sandbox) -> None:
    problem = await default_sandbox.acompile("function (", language="javascript")
    assert problem is not None and problem.line == 1
    assert await default_sandbox.acompile("1 +", language="python") is not None


async def _run_js(sandbox: Sandbox, program: str, workspace: Path) -> ProgramResult:
    async def answer(request: CallRequest) -> CallAnswer:
        return CallAnswer(ok=True, value=None)

    return await sandbox.run(program, language="javascript", workspace=workspace,
                             tools=[], handler=answer)  # fmt: skip


@pytest.mark.parametrize(
    ("program", "where", "name"),
    [
        ("const a = 1;\nlet x = ;\n", (2, 9), "SyntaxError"),
        ("let ok = 1;\nconst a = 1;\nconst a = 2;\n", (3, 7), "SyntaxError"),  # V8's early error
        ("console.log('never');\nimport './missing.mjs';\n", (2, 8), "ImportError"),
    ],
)
async def test_javascript_run_reports_its_compile_problem(
    default_sandbox: Sandbox, tmp_path: Path, program: str, where: tuple[int, int], name: str
) -> None:
    """Deno's module load reports it in the run's own process (issue 11): nothing ran."""
    assert await default_sandbox.precheck(program, language="javascript") is None  # no process
    result = await _run_js(default_sandbox, program, tmp_path)
    problem = result.compile_problem
    assert problem is not None, result
    assert (problem.line, problem.column) == where, problem
    assert problem.message.startswith(name) and "file://" not in problem.message, problem
    assert "never" not in result.output and result.calls == 0


async def test_javascript_syntax_error_thrown_at_run_time_is_a_runtime_error(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    program = "console.log('ran');\nthrow new SyntaxError('made by the program');\n"
    result = await _run_js(default_sandbox, program, tmp_path)
    assert result.compile_problem is None
    assert result.output.strip() == "ran" and "made by the program" in (result.error or "")
    forged = (
        "try { globalThis[Symbol.for('gg.started')] = null; } catch {}\n"
        "throw new Error('still mine');\n"
    )
    result = await _run_js(default_sandbox, forged, tmp_path)
    assert result.compile_problem is None and "still mine" in (result.error or ""), result
