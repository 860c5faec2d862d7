"""The ``gg eval`` command (SPEC M6): thin, over :mod:`gg.eval.runner` and the report."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress as Bar
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

from gg.cliopts import out_console
from gg.endings import Language
from gg.errors import ModelUnavailable, UserError
from gg.eval.chart import write_chart
from gg.eval.models import SpecModels
from gg.eval.report import suite_json, summarize, summary_table, write_json
from gg.eval.runner import Configuration, Progress, RunRecord, run_suite
from gg.eval.tasks import Task, default_suite, load_tasks
from gg.models.factory import validate_spec
from gg.terminal import inert_text

__all__ = ["configurations", "eval_command"]

_MODES = ("tool-calling", "code")
_LANGUAGES: tuple[Language, ...] = ("python", "javascript")


class _Usage(Exception):
    """A bad flag; the message names it (exit 2)."""


def configurations(
    models: list[str], modes: list[str], languages: list[str]
) -> list[Configuration]:
    """Every model x mode x language, the language counted only in code mode.

    Raises:
        _Usage: an unknown mode or language, or a malformed model spec.
    """
    for flag, values, allowed in (("--mode", modes, _MODES), ("--language", languages, _LANGUAGES)):
        for value in values:
            if value not in allowed:
                raise _Usage(f"{flag}: {value!r} is not one of {', '.join(allowed)}")
    for spec in models:
        try:
            validate_spec(spec)
        except UserError as e:
            raise _Usage(f"--model: {e}") from None
    out: list[Configuration] = []
    for spec, mode in itertools.product(models, modes):
        for language in languages if mode == "code" else languages[:1]:
            c = Configuration(model=spec, mode=mode, language=language)  # type: ignore[arg-type]
            if c not in out:
                out.append(c)
    return out


def _status(p: Progress) -> str:
    turn = f" · turn {p.turn}" if p.turn else ""
    return f"[{p.index}/{p.total}] {p.configuration} · {p.task} · repeat {p.repeat}{turn}"


async def _run(
    tasks: list[Task], configs: list[Configuration], console: Console, **options: Any
) -> list[RunRecord]:
    models = SpecModels(progress=lambda say: console.print(inert_text(say, "dim")))
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Bar(*columns, console=console, transient=True) as bar:
        line = bar.add_task("starting", total=None)
        try:
            return await run_suite(
                tasks,
                configs,
                models,
                on_progress=lambda p: bar.update(line, description=_status(p)),
                **options,
            )
        finally:
            await models.aclose()


_Chart = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE", help="Write a PNG chart of success and mean turns (needs gg[eval])."
    ),
]
_MaxTurns = Annotated[
    int, typer.Option(metavar="N", help="The turn ceiling of every session (model replies).")
]


def eval_command(
    model: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SPEC",
            help="A model spec, as gg run --model takes (local, local:NAME, scripted:PATH, "
            "openai:MODEL, anthropic:MODEL, openai-compat:MODEL@URL); scripted:DIR gives "
            "each task the replies in DIR/<task>.json. Repeat for several (default: local).",
        ),
    ] = None,
    mode: Annotated[
        list[str] | None,
        typer.Option(metavar="MODE", help="tool-calling | code; repeat for both."),
    ] = None,
    language: Annotated[
        list[str] | None,
        typer.Option(
            metavar="LANGUAGE", help="python | javascript (code mode's language); repeat for both."
        ),
    ] = None,
    repeat: Annotated[int, typer.Option(metavar="N", help="Runs per task and configuration.")] = 1,
    tasks: Annotated[
        str,
        typer.Option(metavar="GLOB", help="Task names to run, as a glob; commas separate several."),
    ] = "*",
    suite: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The task suite directory (default: the repo's evals/)."),
    ] = None,
    json_path: Annotated[
        Path | None,
        typer.Option("--json", metavar="FILE", help="Write the figures and every run to FILE."),
    ] = None,
    chart: _Chart = None,
    max_turns: _MaxTurns = 8,
) -> None:
    """Run the eval suite: each task in a fresh copy of its workspace, checked by its script.

    Every task runs REPEAT times in every configuration (model x mode x language),
    through gg's Python API, in the task's role (standard: ends with finish; review:
    approve / request_changes). A task's check.py decides success from the workspace
    and the ending, never from what the model says it did. Prints a table per
    configuration: valid-ending rate, success rate, mean turns, error turns by kind,
    ceilings hit, tokens and wall time; --json and --chart write the same.

    Exit codes: 0 the suite ran (whatever the rates); 2 bad usage (nothing run),
    or the JSON or chart could not be written.

    Example: gg eval --model local --mode tool-calling --mode code --max-turns 8 --chart eval.png
    """
    _main(
        models=model or ["local"], modes=mode or ["tool-calling"],
        languages=language or ["python"], repeat=repeat, pattern=tasks, suite=suite,
        json_path=json_path, chart=chart, max_turns=max_turns,
    )  # fmt: skip


def _writable(flag: str, target: Path | None) -> None:
    """Check before the suite runs that ``target`` can be written (not hours later).

    Raises:
        _Usage: its directory is missing or not writable, or it is a directory.
    """
    if target is None:
        return
    folder = target.expanduser().parent
    if target.is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise _Usage(f"{flag}: cannot write {str(target)!r} (no such writable directory)")


def _main(
    *,
    models: list[str],
    modes: list[str],
    languages: list[str],
    repeat: int,
    pattern: str,
    suite: Path | None,
    json_path: Path | None,
    chart: Path | None,
    max_turns: int,
) -> None:
    """``gg eval``'s body: check the flags, run, print, write; exit 2 on bad usage."""
    console = out_console(stderr=True)
    try:
        if repeat < 1 or max_turns < 1:
            raise _Usage("--repeat and --max-turns must be at least 1")
        configs = configurations(models, modes, languages)
        selected = load_tasks(suite or default_suite(), pattern)
        for flag, target in (("--json", json_path), ("--chart", chart)):
            _writable(flag, target)
        records = asyncio.run(_run(selected, configs, console, repeat=repeat, max_turns=max_turns))
        out = out_console()  # a file or a pipe: the whole table, unwrapped
        out.print(summary_table(summarize(records)))
        settings = {"repeat": repeat, "max_turns": max_turns, "tasks": [t.name for t in selected]}
        if json_path is not None:
            write_json(json_path, suite_json(records, settings=settings))
        if chart is not None:
            write_chart(summarize(records), chart)
    except (_Usage, UserError, ModelUnavailable) as e:
        console.print(inert_text(f"gg: error: {e}", "red"), soft_wrap=True)
        raise typer.Exit(2) from None
    except OSError as e:
        console.print(inert_text(f"gg: error: cannot write the report: {e}", "red"), soft_wrap=True)
        raise typer.Exit(2) from None
