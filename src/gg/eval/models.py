"""Models for eval runs from ``--model`` specs (the same factory ``gg run`` uses, SPEC M4).

A spec is passed through :func:`gg.models.factory.model_from_spec` unchanged, so every
form ``gg run --model`` takes works here too. Two eval-only rules:

- ``scripted:FILE`` gives every run a fresh model from FILE (replies are consumed).
- ``scripted:DIR`` (a directory) gives a run of task ``T`` the replies in ``DIR/T.json``:
  a scripted model per task, for tests and demos of the suite.

Any other model is built once per spec and shared by that configuration's runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gg.errors import UserError
from gg.eval.runner import Configuration
from gg.eval.tasks import Task
from gg.models.base import Model
from gg.models.factory import model_from_spec, parse_spec
from gg.models.scripted import ScriptedModel

__all__ = ["SpecModels"]


class SpecModels:
    """A :data:`gg.eval.runner.ModelSource` over model specs.

    Args:
        progress: called with short status lines while a local model loads.
        options: keyword options for every model built, as
            :func:`~gg.models.factory.model_from_spec` takes them (e.g.
            ``max_tokens`` for a reply cap, ``n_threads`` for the local model);
            options a provider does not take are dropped.
    """

    def __init__(
        self,
        progress: Callable[[str], None] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._progress = progress
        self._options = dict(options or {})
        self._built: dict[str, Model] = {}

    def __call__(self, task: Task, configuration: Configuration) -> Model:
        """The model for one run of ``task`` in ``configuration``.

        Raises:
            gg.errors.UserError: a bad spec, or ``scripted:DIR`` without ``DIR/<task>.json``.
            gg.errors.ModelUnavailable: the provider cannot be used (a missing key or extra).
        """
        spec = configuration.model
        parsed = parse_spec(spec)
        if parsed.scheme == "scripted":
            path = Path(parsed.target).expanduser()
            if path.is_dir():
                path = path / f"{task.name}.json"
                if not path.is_file():
                    raise UserError(f"--model: {spec!r} has no replies for task {task.name!r}")
            return ScriptedModel.from_file(path)
        if spec not in self._built:
            self._built[spec] = model_from_spec(spec, progress=self._progress, **self._options)
        return self._built[spec]

    async def aclose(self) -> None:
        """Close the models built (their HTTP clients), ignoring a model without ``aclose``."""
        for model in self._built.values():
            close = getattr(model, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
        self._built.clear()
