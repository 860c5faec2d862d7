"""How ``gg`` writes to what reads it (SPEC §10 CLI, O3): real processes, real pipes.

- a reader that goes away early (``gg show RUN | head -1``) ends gg quietly with exit 0;
- output to a file or a pipe is never hard-wrapped at 80 columns;
- every command's ``--help`` has a plain usage line (``TASK``, not ``{task}``), option
  metavars that say what a value is (``DIR``, ``SPEC``, ``N``), and untruncated summaries.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import typer
from typer.testing import CliRunner

from gg.cli import app
from support import write_script

GG = [sys.executable, "-m", "gg"]
ENV = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
"""gg's environment in these tests: no ``COLUMNS`` (which would set the width on purpose)."""
DEEP = "d" * 60 + "/" + "e" * 60


@pytest.fixture
def long_run(tmp_path: Path) -> tuple[Path, str]:
    """A finished run of 400 turns in a workspace whose path is over 80 characters long."""
    ws = tmp_path / ("a-workspace-with-a-rather-long-name-" + "x" * 60)
    ws.mkdir()
    (ws / "gg.toml").write_text("[ceilings]\nmax_turns = 500\n")
    replies: list[dict[str, object]] = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": f"{DEEP}/f{i}.txt", "content": "y"}}
            ]
        }
        for i in range(400)
    ]
    replies.append({"tool_calls": [{"name": "finish", "arguments": {"summary": "done"}}]})
    script = write_script(tmp_path / "replies.json", replies)
    done = subprocess.run(
        [*GG, "run", "write files", "-w", str(ws), "--model", f"scripted:{script}", "--json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600, env=ENV,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = re.search(r'"run_id": "([^"]+)"', done.stdout)
    assert run_id is not None, done.stdout
    return ws, run_id[1]


@pytest.mark.parametrize("command", ["show", "watch"])
def test_a_reader_that_goes_away_ends_gg_quietly_with_exit_0(
    command: str, long_run: tuple[Path, str], tmp_path: Path
) -> None:
    ws, run_id = long_run
    proc = subprocess.Popen(
        [*GG, command, run_id, "-w", str(ws)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=ENV,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first.startswith((b"stream intact", b"gg run ")), first
    proc.stdout.close()  # as head -1 does: the rest of the report has nowhere to go
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0
    assert err == b"", err.decode()
    # the whole report is far larger than a pipe's buffer: the write really failed
    full = subprocess.run(
        [*GG, command, run_id, "-w", str(ws)], capture_output=True, cwd=tmp_path, env=ENV
    )
    assert full.returncode == 0 and len(full.stdout) > 100_000, len(full.stdout)


def test_a_pipeline_with_head_exits_0(long_run: tuple[Path, str], tmp_path: Path) -> None:
    ws, run_id = long_run
    line = " ".join([*GG, "show", run_id, "-w", str(ws)])
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line} | head -1"],
        capture_output=True, text=True, cwd=tmp_path, env=ENV,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("stream intact"), done
    assert done.stderr == ""


def test_output_to_a_file_is_not_wrapped_at_80_columns(
    long_run: tuple[Path, str], tmp_path: Path
) -> None:
    ws, run_id = long_run
    done = subprocess.run(
        [*GG, "show", run_id, "-w", str(ws)], capture_output=True, text=True, cwd=tmp_path, env=ENV
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(x for x in lines if x.startswith(f"gg run {run_id}"))
    assert f"workspace {ws} · model scripted:" in header and " · sandbox " in header
    assert max(map(len, lines)) > 120
    assert not any(x.startswith("jsonl") or x.startswith("scripted:") for x in lines)


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path under ``group`` (the group itself included; typer's click or not)."""
    yield path
    if hasattr(group, "list_commands"):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            if sub is not None:
                yield from commands(sub, (*path, name))


def all_commands() -> list[tuple[str, ...]]:
    return list(commands(typer.main.get_command(app)))


def help_of(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="gg")
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_reached_by_the_walk() -> None:
    names = {" ".join(p) for p in all_commands()}
    expected = {"run", "resume", "show", "watch", "init", "eval", "board", "board add"}
    assert expected | {"board run", "board migrate", "board retry"} <= names, names


@pytest.mark.parametrize("path", all_commands(), ids=lambda p: " ".join(p) or "gg")
def test_every_help_reads_well(path: tuple[str, ...]) -> None:
    text = help_of(path)
    usage = text.splitlines()[0]
    assert usage.startswith("Usage: gg"), usage
    assert "{" not in usage and "}" not in usage, usage  # not typer's {task}
    assert re.search(r"\[default: \.\]", text) is None  # "." says nothing: the help does
    commands_list = text.split("Commands:")[1] if "Commands:" in text else ""
    assert "..." not in commands_list, commands_list  # summaries are whole, not cut


GG_OWN = [("run",), ("resume",), ("show",), ("watch",), ("init",), ("eval",),
          ("board", "add"), ("board", "list"), ("board", "show"), ("board", "retry"),
          ("board", "reopen"), ("board", "run"), ("board", "migrate")]  # fmt: skip


@pytest.mark.parametrize("path", GG_OWN, ids=" ".join)
def test_options_say_what_their_value_is(path: tuple[str, ...]) -> None:
    text = help_of(path)
    options = text.split("Options:")[1]
    assert not re.search(r"<(str|path|int|float)>", options), options  # DIR, SPEC, N, FILE...
    arguments = re.findall(r"^Usage: gg [\w ]+ \[OPTIONS\] (.+)$", text, re.MULTILINE)
    for arg in arguments[0].split() if arguments else []:
        assert arg == arg.upper(), arg  # TASK, N, RUN_ID|STREAM_PATH
