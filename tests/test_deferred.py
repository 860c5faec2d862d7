"""Optional packages imported when first used (gg.deferred): present, absent, or broken."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import gg
import gg.board.postgres as store_module
import gg.board.raydispatch as ray_module
from gg.deferred import Deferred, deferred, installed


def _package(root: Path, name: str, body: str) -> str:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text(body)
    return name


def test_a_package_is_imported_at_its_first_use_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _package(tmp_path, "gg_deferred_ok", "VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    package = deferred(name)
    assert name not in sys.modules  # binding it imported nothing
    assert installed(package) and package.VALUE == 42
    assert name in sys.modules


def test_a_missing_or_broken_package_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found but failing to import (psycopg without libpq) counts as absent, like missing."""
    broken = _package(tmp_path, "gg_deferred_broken", "raise ImportError('no libpq here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert not installed(deferred(broken))
    assert not installed(deferred("gg_deferred_nowhere"))
    assert not installed(None)  # an extra's module bound to None the old way
    with pytest.raises(ImportError):
        _ = Deferred("gg_deferred_nowhere").anything


def test_a_broken_postgres_extra_is_named_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = _package(tmp_path, "gg_deferred_pq", "raise ImportError('no pq wrapper')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(store_module, "psycopg", deferred(broken))
    with pytest.raises(gg.UserError, match=r"needs the 'postgres' extra"):
        store_module.PostgresStore("postgresql://u@127.0.0.1:1/db")
    monkeypatch.setattr(ray_module, "ray", deferred(broken))
    with pytest.raises(gg.UserError, match=r"--ray needs the 'ray' extra"):
        ray_module._start_ray("local")
