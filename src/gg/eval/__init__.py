"""``gg eval``: run the shipped task suite and report how a model does (SPEC M6).

A task is a directory of ``evals/``: ``task.toml`` (role, class, text), ``workspace/``
(the files the agent starts from, copied fresh for every run) and ``check.py`` (the
scripted success check, which reads the outcome on stdin and trusts nothing the model
said: it runs the workspace's tests in gg's sandbox, reads files, compares the verdict
with the known-good or known-bad change). Modules:

- :mod:`gg.eval.tasks`: loading tasks.
- :mod:`gg.eval.checks`: the helpers ``check.py`` scripts use, and running one.
- :mod:`gg.eval.runner`: one run of a task in a configuration, and the suite.
- :mod:`gg.eval.report`: per-configuration figures, the table, the JSON.
- :mod:`gg.eval.chart`: the PNG chart (matplotlib, the ``eval`` extra).
- :mod:`gg.eval.cli`: the ``gg eval`` command.
"""

from __future__ import annotations

from gg.eval.report import Summary, summarize
from gg.eval.runner import Configuration, RunRecord, run_suite
from gg.eval.tasks import Task, default_suite, load_tasks

__all__ = [
    "Configuration",
    "RunRecord",
    "Summary",
    "Task",
    "default_suite",
    "load_tasks",
    "run_suite",
    "summarize",
]
