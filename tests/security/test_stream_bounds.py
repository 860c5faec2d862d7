"""The stream keeps a bounded record of each call, whatever a program sends (issue 9).

The stream lives in gg's state directory, outside the workspace and its write
cap: a program making many calls with megabytes of arguments must not be able to
fill gg's disk through it. The tool still gets the whole arguments.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gg
from gg.stream import excerpt_arguments, read_events
from gg.testing import ScriptedModel, call

PROGRAM = """
big = "x" * 900_000  # under the membrane's 1 MB a message
for i in range(30):
    gg.tools.write_file(path=f"f{i}.txt", content=big)
gg.session.finish("wrote 30 files")
"""


def test_27_megabytes_of_arguments_leave_a_small_stream(workspace: Path) -> None:
    model = ScriptedModel([call("submit_program", program=PROGRAM)])
    result = gg.Agent(model=model, workspace=workspace, mode="code").run("write")
    assert result.status == "ended", result.diagnosis
    assert (workspace / "f29.txt").stat().st_size == 900_000  # the tool got it all
    assert result.stream.stat().st_size < 1_000_000  # the stream did not
    calls = [
        e for e in read_events(result.stream) if e.type == "tool_call" and e.name == "write_file"
    ]
    assert len(calls) == 30 and isinstance(first := calls[0].arguments, dict)
    assert "characters cut" in first["content"]


def test_tool_calling_arguments_are_bounded_too(workspace: Path) -> None:
    model = ScriptedModel(
        [call("write_file", path="a.txt", content="y" * 3_000_000), call("finish", summary="ok")]
    )
    result = gg.Agent(model=model, workspace=workspace).run("write")
    assert result.status == "ended"
    assert (workspace / "a.txt").stat().st_size == 3_000_000
    assert result.stream.stat().st_size < 100_000


def test_excerpt_arguments_bounds_width_depth_and_total() -> None:
    wide = {f"k{i}": "v" * 5000 for i in range(500)}
    cut = excerpt_arguments(wide)
    assert len(cut) == 201 and sum(len(str(v)) for v in cut.values()) < 40_000
    deep: object = "leaf"
    for _ in range(100):
        deep = [deep]
    assert "nested too deep" in str(excerpt_arguments(deep))
    assert excerpt_arguments({"n": 1, "s": "short"}) == {"n": 1, "s": "short"}


def test_secrets_json_escapes_are_redacted_too(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = 'pa"ss\\wörd-99-\u00e9'
    monkeypatch.setenv("MY_PASSWORD", secret)
    model = ScriptedModel(
        [
            call("write_file", path="a.txt", content=f"key={secret}"),
            call("finish", summary=f"used {secret}"),
        ]
    )
    result = gg.Agent(model=model, workspace=workspace).run("write")
    text = result.stream.read_text(encoding="utf-8")
    assert "ss\\\\w" not in text and 'pa\\"ss' not in text and "[redacted]" in text
    assert all(e.type for e in read_events(result.stream))  # still valid, sealed JSON lines
