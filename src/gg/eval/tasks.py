"""Eval tasks: ``evals/<name>/`` with ``task.toml``, ``workspace/`` and ``check.py`` (SPEC M6).

``task.toml``::

    role = "standard"            # or "review": which ending group the session has (SPEC S2)
    class = "fix a bug"          # what kind of task it is, for the report
    text = "The test fails ..."  # the task given to the agent

A task is the same in every mode and language: the mode and the program language are
the run's configuration, not the task's.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gg.endings import Role
from gg.errors import UserError

__all__ = ["Task", "default_suite", "load_task", "load_tasks"]

_KEYS = {"role", "class", "text"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One eval task.

    Attributes:
        name: the directory's name (``fix-off-by-one``).
        role: the session's role (SPEC S2).
        kind: the task's class (``task.toml``'s ``class``), for the report.
        text: the task text the agent gets.
        workspace: the pristine workspace directory (never run in: runs get a copy).
        check: the ``check.py`` script.
    """

    name: str
    role: Role
    kind: str
    text: str
    workspace: Path
    check: Path


def default_suite() -> Path:
    """The suite shipped in the repo (``evals/`` beside ``src/``), else ``./evals``."""
    shipped = Path(__file__).resolve().parents[3] / "evals"
    return shipped if shipped.is_dir() else Path("evals")


def load_task(directory: Path) -> Task:
    """Load the task in ``directory``.

    Raises:
        UserError: a missing part, a TOML error, an unknown key or a bad role/text.
    """
    spec = directory / "task.toml"
    for part in (spec, directory / "check.py"):
        if not part.is_file():
            raise UserError(f"eval task {directory.name!r}: {part.name} is missing")
    if not (directory / "workspace").is_dir():
        raise UserError(f"eval task {directory.name!r}: workspace/ is missing")
    try:
        data = tomllib.loads(spec.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"eval task {directory.name!r}: task.toml: {e}") from None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise UserError(f"eval task {directory.name!r}: task.toml: unknown key {unknown[0]!r}")
    text, role = data.get("text"), data.get("role", "standard")
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"eval task {directory.name!r}: task.toml: text must be a non-empty string")
    if role not in {r.value for r in Role}:
        raise UserError(f"eval task {directory.name!r}: task.toml: role must be standard or review")
    return Task(
        name=directory.name,
        role=Role(role),
        kind=str(data.get("class", "")),
        text=" ".join(text.split()),
        workspace=(directory / "workspace").resolve(),
        check=(directory / "check.py").resolve(),
    )


def load_tasks(suite: Path, pattern: str = "*") -> list[Task]:
    """The tasks of ``suite`` whose names match the glob ``pattern``, sorted by name.

    Args:
        suite: a directory of task directories.
        pattern: a shell glob over task names (``review-*``); commas separate several.

    Raises:
        UserError: the suite is not a directory, no task matches, or a task is malformed.
    """
    if not suite.is_dir():
        raise UserError(f"--suite: {str(suite)!r} is not a directory")
    globs = [p.strip() for p in pattern.split(",") if p.strip()] or ["*"]
    tasks = [
        load_task(d)
        for d in sorted(suite.iterdir())
        if d.is_dir()
        and (d / "task.toml").is_file()
        and any(fnmatch.fnmatchcase(d.name, g) for g in globs)
    ]
    if not tasks:
        raise UserError(f"--tasks: no task in {str(suite)!r} matches {pattern!r}")
    return tasks
