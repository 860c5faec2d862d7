"""Escape payloads from other projects' sandboxes: gg must keep ``expected.gg_expected`` (SPEC M3).

Read from ``shared/corpora`` beside the repository; a missing corpus fails.
Peers *reject* much of this by inspecting code; gg may simply run it, in
its own process under the sandbox. What must hold for every payload: the
canary outside the workspace is neither read nor changed, gg's environment
(a fake API key) never shows, the loopback server gets no connection,
nothing is left running, gg does not raise, and the next program runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sandbox_support import SHARED, Arena, Recorder, TcpServer, leftover_processes

from gg.models.base import ToolSpec
from gg.sandbox import Limits, ProgramResult, Sandbox

CORPUS_LIMITS = Limits(wall_s=2, cpu_s=1, memory_mb=256, processes=32, output_bytes=50_000)
TOOLS = [ToolSpec(name="read_file", description="Read.", parameters={"type": "object"})]


def _cases(name: str, language: str) -> list[Any]:
    path = SHARED / "corpora" / name
    if not path.is_file():
        return [pytest.param(language, {"id": "missing", "path": str(path)}, id=f"{name}-missing")]
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [pytest.param(language, c, id=c["id"]) for c in cases]


@pytest.fixture
def corpus_sandbox(default_sandbox: Sandbox) -> Sandbox:
    return Sandbox(limits=CORPUS_LIMITS, isolation=default_sandbox.isolation)


async def _check(
    sandbox: Sandbox, arena: Arena, server: TcpServer, secret: str, result: ProgramResult
) -> None:
    text = f"{result.output}\n{result.error}\n{result.returned}"
    assert arena.secret not in text
    assert secret not in text
    assert arena.canary_intact()
    assert server.connections == 0
    assert leftover_processes(str(arena.root)) == []
    alive = await sandbox.run(
        "print('alive')", language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert (alive.output, alive.error) == ("alive\n", None)


_PRELUDES = {
    "python": lambda canary: f"import sys\nVICTIM_ABS_PATH = {str(canary)!r}\n",
    "javascript": lambda canary: f"const VICTIM_ABS_PATH = {json.dumps(str(canary))};\n",
}


@pytest.mark.parametrize(
    ("language", "case"),
    _cases("sandbox_escapes_python.jsonl", "python")
    + _cases("sandbox_escapes_js.jsonl", "javascript"),
)
async def test_escape_is_contained(
    language: str,
    case: Any,
    corpus_sandbox: Sandbox,
    arena: Arena,
    tcp_server: TcpServer,
    secret_env: str,
) -> None:
    if case["id"] == "missing":
        pytest.fail(f"the corpus {case['path']} is missing")
    assert case["expected"]["gg_expected"]
    program = _PRELUDES[language](arena.canary) + case["input"]
    if language == "python" and corpus_sandbox.compile(program, language="python") is not None:
        return  # does not compile: an error turn, never run (M2)
    result = await corpus_sandbox.run(
        program, language=language, workspace=arena.workspace,  # type: ignore[arg-type]
        tools=TOOLS, handler=Recorder(),
    )  # fmt: skip
    await _check(corpus_sandbox, arena, tcp_server, secret_env, result)


def test_corpora_are_there() -> None:
    for name in ("sandbox_escapes_python.jsonl", "sandbox_escapes_js.jsonl"):
        assert (SHARED / "corpora" / name).is_file(), f"missing {SHARED / 'corpora' / name}"
    assert Path(__file__).name
