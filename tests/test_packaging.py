"""The wheel as a user gets it: built, installed alone into a fresh venv, run (issue 14 item 1).

The source tree is copied aside and its wheel built there (``pip wheel``, the build
backend fetched as pip does); a fresh venv installs it with only its declared
dependencies (from the package index or pip's cache); then the installed ``gg`` (not
this checkout: no ``PYTHONPATH``, run from elsewhere) prints its version from the
package metadata and runs a scripted session to ``finish`` in the real sandbox.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from support import write_script

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS_ONLY = {"openai", "anthropic", "llama-cpp-python", "llama_cpp_python", "numpy", "fastapi"}
"""Distributions that come only with an extra: the bare wheel must not pull them."""


def _run(*cmd: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{cmd}: {done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the built wheel installed; yields its bin/ and a clean env."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run(*pip, "wheel", "--no-deps", "-w", base / "dist", source, cwd=base, env=env)
    wheels = list((base / "dist").glob("gg_agent-*.whl"))
    assert len(wheels) == 1, wheels
    _run(sys.executable, "-m", "venv", base / "venv", cwd=base, env=env)
    bin_dir = base / "venv" / "bin"
    _run(
        bin_dir / "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
        wheels[0],
        cwd=base,
        env=env,
    )
    return bin_dir, env


@pytest.mark.slow
def test_the_wheel_installs_only_its_declared_dependencies(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bin_dir, env = installed
    listing = _run(bin_dir / "pip", "list", "--format=json", cwd=tmp_path, env=env).stdout
    names = {item["name"].lower() for item in json.loads(listing)}
    assert "gg-agent" in names and not names & EXTRAS_ONLY, names
    where = _run(bin_dir / "python", "-c", "import gg; print(gg.__file__)", cwd=tmp_path, env=env)
    assert str(bin_dir.parent) in where.stdout  # the installed copy, not this checkout
    meta = _run(
        bin_dir / "python",
        "-c",
        "import importlib.metadata as m; d = m.metadata('gg-agent'); "
        "print(d['License-Expression']); print(d['Name'])",
        cwd=tmp_path,
        env=env,
    )
    assert meta.stdout.split() == ["Apache-2.0", "gg-agent"]


@pytest.mark.slow
def test_the_installed_gg_prints_its_version_and_runs_a_session(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bin_dir, env = installed
    version = _run(bin_dir / "gg", "--version", cwd=tmp_path, env=env)
    assert version.stdout.strip() == f"gg {PROJECT['version']}"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the answer is 42\n")
    script = write_script(
        tmp_path / "replies.json",
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": "It says 42."}}]},
        ],
    )
    done = _run(
        bin_dir / "gg",
        "run",
        "read the notes",
        "-w",
        workspace,
        "--model",
        f"scripted:{script}",
        "--json",
        cwd=tmp_path,
        env=env | {"GG_STATE_HOME": str(tmp_path / "state")},
    )
    result = json.loads(done.stdout)
    assert result["status"] == "ended"
    assert result["ending"] == {"call": "finish", "summary": "It says 42."}
    stream = Path(result["stream"]).read_text()
    assert "the answer is 42" in stream  # the tool really ran in the installed gg


def test_version_comes_from_the_metadata_of_the_distribution_in_use() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gg", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    try:  # this checkout installed (scripts/setup) or only on PYTHONPATH
        expected = f"gg {importlib.metadata.version('gg-agent')}"
    except importlib.metadata.PackageNotFoundError:
        expected = f"gg {PROJECT['version']} (not installed)"
    assert done.stdout.strip() == expected
