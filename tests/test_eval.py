"""``gg eval`` over the real evals/ suite (SPEC M6).

A scripted model that does each task right passes every check; one that does each
task wrong (writes the test instead of the code, answers wrongly, approves a broken
change, edits the change under review, ends without doing the work) fails every
check: each check can fail. The JSON and the PNG are written and well-formed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.eval.models import SpecModels
from gg.eval.runner import Configuration, RunRecord, run_suite
from gg.eval.tasks import default_suite, load_tasks

SUITE = default_suite()
SOURCE = Path(gg.__file__).resolve().parents[1]
Call = tuple[str, dict[str, Any]]


def _w(path: str, content: str) -> Call:
    return ("write_file", {"path": path, "content": content})


def _r(path: str) -> Call:
    return ("read_file", {"path": path})


def _finish(summary: str) -> Call:
    return ("finish", {"summary": summary})


APPROVE: Call = ("approve", {})
REJECT: Call = ("request_changes", {"items": ["This change breaks the promised behaviour."]})

PAGING = (
    "def page(items, number, size):\n    start = (number - 1) * size\n"
    "    return items[start : start + size]\n\n\n"
    "def page_count(total, size):\n    return (total + size - 1) // size\n"
)
STATS = (
    "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n\n\n"
    "def spread(values):\n    return max(values) - min(values) if values else 0.0\n"
)
SHOP = (
    "def order_total(prices, discount=0.0):\n    return round(sum(prices) * (1.0 - discount), 2)\n"
)
REPORT = (
    "from shop import order_total\n\n\n"
    "def describe(prices):\n    return f'{len(prices)} items, {order_total(prices):.2f}'\n"
)
TEXTUTIL = (
    "def shout(text):\n    return text.upper() + '!'\n\n\n"
    "def slugify(text):\n    return '-'.join(text.lower().split())\n"
)
FAKE_TEST = (
    "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
)

RIGHT: dict[str, list[Call]] = {
    "fix-off-by-one": [_r("paging.py"), _w("paging.py", PAGING), _finish("Fixed page().")],
    "fix-empty-average": [_w("stats.py", STATS), _finish("mean([]) is 0.0 now.")],
    "rename-across-files": [_w("shop.py", SHOP), _w("report.py", REPORT), _finish("Renamed.")],
    "add-missing-function": [_w("textutil.py", TEXTUTIL), _finish("Added slugify.")],
    "answer-from-json": [_r("services.json"), _finish("billing listens on port 7443.")],
    "answer-from-notes": [_r("NOTES.md"), _finish("Tomasz Wierzbicki manages 3.2.")],
    "create-version-file": [_r("CHANGELOG.md"), _w("VERSION", "2.4.1\n"), _finish("Wrote it.")],
    "create-module": [
        _w("greet.py", "def greet(name):\n    return f'Hello, {name}!'\n"),
        _finish("Added greet.py."),
    ],
    "review-deleted-check": [_r("CHANGE.diff"), REJECT],
    "review-broken-loop": [_r("CHANGE.diff"), REJECT],
    "review-good-refactor": [_r("CHANGE.diff"), APPROVE],
    "review-good-fix": [_r("CHANGE.diff"), APPROVE],
}

WRONG: dict[str, list[Call]] = {  # each one plausible, each one a failure its check must see
    "fix-off-by-one": [_w("test_paging.py", FAKE_TEST), _finish("Tests pass now.")],
    "fix-empty-average": [_w("test_stats.py", FAKE_TEST), _finish("Tests pass now.")],
    "rename-across-files": [_w("shop.py", SHOP), _finish("Renamed.")],  # report.py forgotten
    "add-missing-function": [_w("test_textutil.py", FAKE_TEST), _finish("Done.")],
    "answer-from-json": [_finish("The billing service uses the default port 8000.")],
    "answer-from-notes": [_finish("Priya Natarajan.")],
    "create-version-file": [_w("VERSION", "2.4.0\n"), _finish("Wrote it.")],
    "create-module": [_finish("Added greet.py.")],  # ends without doing the work
    "review-deleted-check": [APPROVE],
    # a reviewer cannot write to the workspace any more (issue 16): its wrong work is the
    # wrong verdict
    "review-broken-loop": [_r("CHANGE.diff"), APPROVE],
    "review-good-refactor": [REJECT],
    "review-good-fix": [_r("CHANGE.diff"), REJECT],
}


def _tool_replies(calls: list[Call]) -> dict[str, Any]:
    return {"replies": [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls]}


def _python_line(name: str, args: dict[str, Any]) -> str:
    kwargs = ", ".join(f"{k}={v!r}" for k, v in args.items())
    where = "session" if name in ("finish", "approve", "request_changes") else "tools"
    return f"gg.{where}.{name}({kwargs})"


def _js_line(name: str, args: dict[str, Any]) -> str:
    where = "session" if name in ("finish", "approve", "request_changes") else "tools"
    camel = name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])
    if where == "tools":
        return f"await gg.tools.{camel}({json.dumps(args)});"
    return f"await gg.session.{camel}({', '.join(json.dumps(v) for v in args.values())});"


def _program_replies(calls: list[Call], language: str) -> dict[str, Any]:
    line = _python_line if language == "python" else _js_line
    program = "\n".join(line(n, a) for n, a in calls)
    return {
        "replies": [{"tool_calls": [{"name": "submit_program", "arguments": {"program": program}}]}]
    }


def _script_dir(root: Path, behaviour: dict[str, list[Call]], mode: str, language: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for task, calls in behaviour.items():
        data = _tool_replies(calls) if mode == "tool-calling" else _program_replies(calls, language)
        (root / f"{task}.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def _suite(
    tmp: Path, behaviour: dict[str, list[Call]], *, mode: str = "tool-calling",
    language: str = "python", pattern: str = "*",
) -> list[RunRecord]:  # fmt: skip
    scripts = _script_dir(tmp / f"{mode}-{language}", behaviour, mode, language)
    config = Configuration(model=f"scripted:{scripts}", mode=mode, language=language)  # type: ignore[arg-type]
    models = SpecModels()
    return asyncio.run(run_suite(load_tasks(SUITE, pattern), [config], models, max_turns=6))


def test_the_suite_has_both_roles_and_at_least_a_dozen_tasks() -> None:
    tasks = load_tasks(SUITE)
    assert len(tasks) >= 12
    assert {t.role.value for t in tasks} == {"standard", "review"}
    assert {t.name for t in tasks} == set(RIGHT) == set(WRONG)


def test_the_right_work_passes_every_check(tmp_path: Path) -> None:
    records = _suite(tmp_path, RIGHT)
    failed = {r.task: (r.status, r.check, r.error) for r in records if not r.success}
    assert not failed
    assert all(r.valid_ending and r.check.startswith("ok") for r in records)


def test_the_wrong_work_fails_every_check(tmp_path: Path) -> None:
    records = _suite(tmp_path, WRONG)
    passed = [r.task for r in records if r.success]
    assert not passed, f"checks that cannot fail: {passed}"
    assert all(r.valid_ending for r in records)  # the endings were valid; the work was not
    assert all(r.check.startswith("fail:") for r in records), [r.check for r in records]


def test_a_session_stopped_by_a_ceiling_is_no_success(tmp_path: Path) -> None:
    prose: dict[str, list[object]] = {"answer-from-notes": [], "review-good-fix": []}
    scripts = tmp_path / "prose"
    scripts.mkdir()
    for task in prose:
        replies = {"replies": [{"text": "Tomasz Wierzbicki. I approve."}] * 4}
        (scripts / f"{task}.json").write_text(json.dumps(replies), encoding="utf-8")
    config = Configuration(model=f"scripted:{scripts}")
    tasks = load_tasks(SUITE, "answer-from-notes,review-good-fix")
    records = asyncio.run(run_suite(tasks, [config], SpecModels(), max_turns=4))
    assert [(r.status, r.valid_ending, r.success) for r in records] == [
        ("stopped", False, False)
    ] * 2
    assert all(r.ceiling == "consecutive_errors" for r in records)
    assert all(r.error_turns == {"no_tool_call": 3} for r in records)


def test_code_mode_in_python_and_javascript(tmp_path: Path) -> None:
    for language in ("python", "javascript"):
        right = _suite(tmp_path, RIGHT, mode="code", language=language, pattern="fix-*,review-*")
        assert [(r.task, r.check) for r in right if not r.success] == []
        assert {r.configuration for r in right} == {
            f"scripted:{tmp_path}/code-{language} · code · {language}"
        }
    wrong = _suite(tmp_path / "w", WRONG, mode="code", pattern="create-*,review-good-*")
    assert [r.task for r in wrong if r.success] == []


def _gg(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(SOURCE), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "gg", *args], capture_output=True, text=True, cwd=cwd,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": path}, timeout=600, check=False,
    )  # fmt: skip


def test_the_cli_prints_the_table_and_writes_json_and_a_png(tmp_path: Path) -> None:
    scripts = _script_dir(tmp_path / "scripts", RIGHT, "tool-calling", "python")
    if importlib.util.find_spec("matplotlib") is None:  # a set-up bug: fail, never skip
        pytest.fail("matplotlib is missing: install gg[eval] (scripts/setup does)")
    done = _gg(
        "eval", "--model", f"scripted:{scripts}", "--tasks", "answer-*,review-good-*",
        "--repeat", "2", "--json", "out.json", "--chart", "out.png", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "valid endings" in done.stdout and "100%" in done.stdout
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["settings"]["tasks"] == [
        "answer-from-json", "answer-from-notes", "review-good-fix", "review-good-refactor"
    ]  # fmt: skip
    [summary] = data["configurations"]
    assert (summary["runs"], summary["success_rate"], summary["valid_ending_rate"]) == (8, 1.0, 1.0)
    assert summary["mean_turns"] == 2.0
    assert len(data["runs"]) == 8 and {r["repeat"] for r in data["runs"]} == {1, 2}
    png = (tmp_path / "out.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000


def test_eval_help_and_bad_usage(tmp_path: Path) -> None:
    done = _gg("eval", "--help", cwd=tmp_path)
    assert done.returncode == 0 and "--max-turns" in done.stdout and "--chart" in done.stdout
    for args, named in (
        (["--mode", "prose"], "--mode"),
        (["--model", "nonsense:x"], "--model"),
        (["--tasks", "no-such-task"], "--tasks"),
        (["--repeat", "0"], "--repeat"),
    ):
        done = _gg("eval", *args, "--json", "x.json", cwd=tmp_path)
        assert done.returncode == 2 and named in done.stderr, (args, done.stderr)
        assert not (tmp_path / "x.json").exists()
