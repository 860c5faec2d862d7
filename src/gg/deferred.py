"""Optional packages imported when first used, not when gg starts.

``ray`` and ``psycopg`` (the ``ray`` and ``postgres`` extras) take about a third of a
second to import, and most gg commands never touch them: every ``gg`` process paid
that at start. A module that needs one binds it with :func:`deferred` (its type
checker sees the real package through ``TYPE_CHECKING``) and asks :func:`installed`
before it relies on it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["Deferred", "deferred", "installed"]


class Deferred:
    """Stands for the package ``name``: the first attribute read imports it.

    Raises (on an attribute read):
        ImportError: the package is not installed (ask :func:`installed` first).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None
        self._present: bool | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and the like probe these: not the package's
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def present(self) -> bool:
        """Whether the package can be used: it is installed and imports (imported now, once).

        A package that is there but fails to import (psycopg without libpq, a broken
        build) counts as absent, so the caller names the extra instead of a traceback.
        """
        if self._present is None:
            try:
                self._module = importlib.import_module(self._name)
                self._present = True
            except ImportError:
                self._present = False
        return self._present


def deferred(name: str) -> Any:
    """A :class:`Deferred` for the top-level package ``name`` (typed as the package)."""
    return Deferred(name)


def installed(package: object) -> bool:
    """Whether ``package`` (a :func:`deferred` package, or an imported module) can be used."""
    if isinstance(package, Deferred):
        return package.present()
    return package is not None
