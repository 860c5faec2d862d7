"""On-recall errors name the script file's own lines in JavaScript too (issue 12).

The memory's on-recall script runs with one line added before it (the
``recall`` data, :func:`gg.onuse.with_data`); every line number gg shows of it
(a runtime stack, a compile error, Deno's code frame) is the file's own.
Real Deno, in the run's sandbox.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gg
from gg.config import settings_from_dict
from gg.testing import ScriptedModel, call

CAPS = ["files", "shell", "memory"]


def _shown(workspace: Path, script: str) -> str:
    """What the model sees after a recall with ``script`` as the on-recall script."""
    (workspace / "on_recall.js").write_text(script)
    settings = settings_from_dict(
        {"tools": {"capabilities": CAPS}, "memory": {"on_recall": "on_recall.js"}}
    )
    model = ScriptedModel([call("recall", query="q"), call("finish", summary="done")])
    result = gg.Agent(model=model, workspace=workspace, settings=settings).run("t")
    assert result.status == "ended", result.diagnosis
    return str(model.calls[1][0][-1].content)


@pytest.mark.parametrize(
    ("script", "lines"),
    [
        ("const x = 1;\nconst y = 2;\nthrow new Error('on line three');\n", [3]),
        ("function f() {\n  return null.boom;\n}\n\nf();\n", [2, 5]),
        ("const a = 1;\n\n\n\nnoSuchFunction();\n", [5]),
        ("throw new RangeError('first line');\n", [1]),
    ],
)
def test_on_recall_stacks_name_the_files_own_lines(
    workspace: Path, script: str, lines: list[int]
) -> None:
    shown = _shown(workspace, script)
    assert "on-recall script failed" in shown, shown
    assert [int(n) for n in re.findall(r"program\.js:(\d+):", shown)] == lines, shown


@pytest.mark.parametrize(
    ("script", "line"),
    [
        ("console.log('fine');\nconsole.log('broken'\n", 2),
        ("const a = 1;\nconst b = 2;\nconst = 3;\n", 3),
    ],
)
def test_on_recall_compile_errors_name_the_files_own_line(
    workspace: Path, script: str, line: int
) -> None:
    shown = _shown(workspace, script)
    assert f"does not compile (line {line}," in shown, shown
    assert [int(n) for n in re.findall(r"program\.js:(\d+):", shown)] == [line], shown
    frame = re.findall(r"(?m)^ *(\d+) \| ", shown)  # Deno's code frame, when it shows one
    assert all(int(n) == line for n in frame), shown
    source = script.splitlines()[line - 1]
    assert not frame or f"{line} | {source}" in shown, shown
