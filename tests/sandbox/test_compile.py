"""Compile errors carry the compiler's own message with line and column (SPEC S5)."""

from __future__ import annotations

import time

from gg.sandbox import Sandbox


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
