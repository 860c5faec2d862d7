"""The workspace's .git and gg's own installation are out of an agent's reach (issue 9).

- A workspace that is a git repository: the operator's next ``git status`` runs
  what ``.git/config`` and ``.git/hooks`` hold. Under bubblewrap ``.git`` is
  read-only to programs and commands; under the other layers the write lands
  and the run's end warns, naming the files (adversary F22).
- gg installed in a venv inside the workspace: a planted ``.pth`` would run in
  the next gg, with its keys. Under bubblewrap the installation is read-only;
  under a layer that cannot do that, gg refuses to start (adversary F21).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import gg
from gg.sandbox.host import Isolation
from gg.sandbox.isolation import _missing
from gg.testing import ScriptedModel, call

PLANT = (
    "git config core.fsmonitor 'touch /tmp/gg-fsmonitor-ran'; "
    "printf '#!/bin/sh\\ntouch /tmp/gg-hook-ran\\n' > .git/hooks/post-checkout; "
    "echo rc=$?"
)
SRC = Path(gg.__file__).resolve().parents[1]


@pytest.fixture
def tmp_path(open_dir: Path) -> Path:
    """World-searchable, unlike pytest's (see the ``open_dir`` fixture)."""
    return open_dir


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("a\n")
    return path


def _needs(layer: str) -> None:
    why = _missing(Isolation(layer))
    if why:
        pytest.skip(f"{layer}: {why}")


def test_under_bwrap_the_workspace_git_is_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs("bwrap")
    monkeypatch.setenv("GG_SANDBOX", "bwrap")
    ws = _repo(tmp_path / "ws")
    before = (ws / ".git" / "config").read_bytes()
    model = ScriptedModel([call("run_command", command=PLANT), call("finish", summary="ok")])
    result = gg.Agent(model=model, workspace=ws).run("plant")
    assert result.status == "ended"
    assert (ws / ".git" / "config").read_bytes() == before
    assert not (ws / ".git" / "hooks" / "post-checkout").exists()
    out = next(e for e in gg.stream.read_events(result.stream) if e.type == "tool_result")
    assert "Read-only file system" in out.excerpt


@pytest.mark.parametrize("layer", ["unshare", "rlimit"])
def test_elsewhere_a_changed_git_is_named_at_the_end_of_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    layer: str,
) -> None:
    _needs(layer)
    monkeypatch.setenv("GG_SANDBOX", layer)
    ws = _repo(tmp_path / "ws")
    model = ScriptedModel([call("run_command", command=PLANT), call("finish", summary="ok")])
    result = gg.Agent(model=model, workspace=ws).run("plant")
    assert result.status == "ended"
    err = capsys.readouterr().err
    assert ".git/config" in err and ".git/hooks/post-checkout" in err and "Review" in err
    quiet = gg.Agent(model=ScriptedModel([call("finish", summary="ok")]), workspace=ws).run("t")
    assert quiet.status == "ended" and ".git" not in capsys.readouterr().err


def _venv_in(ws: Path) -> Path:
    """A venv inside ``ws`` whose python imports gg from this checkout."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(ws / ".venv")],
                   check=True)  # fmt: skip
    site = Path(
        sysconfig.get_paths(vars={"base": str(ws / ".venv"), "platbase": str(ws / ".venv")})[
            "purelib"
        ]
    )
    site.mkdir(parents=True, exist_ok=True)
    (site / "gg-dev.pth").write_text(f"{SRC}\n{sysconfig.get_paths()['purelib']}\n")
    return ws / ".venv" / "bin" / "python"


def _gg_run(
    python: Path, ws: Path, tmp: Path, layer: str, command: str
) -> subprocess.CompletedProcess[str]:
    script = tmp / "s.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
                    {"tool_calls": [{"name": "finish", "arguments": {"summary": "ok"}}]},
                ]
            }
        )
    )
    env = {**os.environ, "GG_SANDBOX": layer}
    return subprocess.run([str(python), "-m", "gg", "run", "t", "-w", str(ws), "--model",
                           f"scripted:{script}", "--json"],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip


@pytest.mark.parametrize("layer", ["bwrap", "unshare", "rlimit"])
def test_gg_installed_inside_the_workspace_is_read_only_or_refused(
    tmp_path: Path, layer: str
) -> None:
    _needs(layer)
    ws = tmp_path / "ws"
    ws.mkdir()
    python = _venv_in(ws)
    site = next((ws / ".venv" / "lib").glob("python*/site-packages"))
    evil = site / "evil.pth"
    done = _gg_run(python, ws, tmp_path, layer, f"echo 'import os' > {evil}; echo rc=$?")
    if layer == "bwrap":
        assert done.returncode == 0, done.stderr
        assert not evil.exists()
        stream = Path(json.loads(done.stdout)["stream"])
        assert "Read-only file system" in stream.read_text()
    else:
        assert done.returncode == 2, done.stdout + done.stderr
        assert "installation" in done.stderr and "inside the workspace" in done.stderr
        assert not evil.exists()


def test_python_m_gg_started_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "s.json"
    script.write_text(
        '{"replies": [{"tool_calls": [{"name": "finish", "arguments": {"summary": "ok"}}]}]}'
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-m", "gg", "run", "t", "-w", ".", "--model",
                           f"scripted:{script}"], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "import path" in done.stderr
    elsewhere = subprocess.run([sys.executable, "-m", "gg", "run", "t", "-w", str(ws),
                                "--model", f"scripted:{script}"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=120)  # fmt: skip
    assert elsewhere.returncode == 0, elsewhere.stderr


@pytest.mark.parametrize("layer", ["bwrap", "rlimit"])
def test_a_nested_repository_made_by_the_run_is_named_at_its_end(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    layer: str,
) -> None:
    _needs(layer)
    monkeypatch.setenv("GG_SANDBOX", layer)
    ws = _repo(tmp_path / "ws")  # the top .git is read-only under bwrap; sub/ is not
    plant = (
        "mkdir -p sub && cd sub && git init -q . && "
        "git config core.fsmonitor 'touch /tmp/gg-nested-ran' && echo made"
    )
    model = ScriptedModel([call("run_command", command=plant), call("finish", summary="ok")])
    result = gg.Agent(model=model, workspace=ws).run("plant")
    assert result.status == "ended"
    out = next(e for e in gg.stream.read_events(result.stream) if e.type == "tool_result")
    assert "made" in out.excerpt, out.excerpt
    assert "sub/.git" in capsys.readouterr().err
