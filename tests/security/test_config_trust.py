"""A gg.toml an agent wrote cannot weaken the next run's boundary unasked (issue 9 item 2).

Played for real: a first run's agent writes (or rewrites) gg.toml with
``run_command``; the next run must refuse to start (exit 2, nothing written)
while the new file asks for a weakening setting, until the operator passes
``--trust-config``. On a board, an implementer's merged gg.toml is caught the
same way on the repository's next run.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import gg
from gg.config import settings_from_dict
from gg.errors import ConfigError
from gg.models.base import Message, Reply, ToolSpec
from gg.testing import ScriptedModel, call
from gg.trust import weakening
from support import write_script

WEAK = {
    "host-commands": '[sandbox]\ncommands = "host"\n',
    "trusted-hook": '[[hooks.agent_stop]]\ncommand = "true"\ntrusted = true\n',
    "pass-env": '[[hooks.agent_stop]]\ncommand = "true"\npass_env = ["OPENAI_API_KEY"]\n',
    "forced-layer": '[sandbox]\nisolation = "rlimit"\n',
    "model-server": '[model]\nspec = "openai-compat:m@http://127.0.0.1:9/v1"\n',
    "store-path": '[board]\nstore = "sqlite:/tmp/elsewhere.sqlite3"\n',
}


def _agent_writes(ws: Path, text: str) -> gg.RunResult:
    """One run whose agent writes ``text`` to gg.toml from inside the sandbox, under the
    rlimit layer (under bwrap an existing gg.toml is mounted read-only; a missing one can
    still be created, which the parametrized test plays under the default layer)."""
    command = f"printf %s {shlex.quote(text)} > gg.toml && echo written"
    model = ScriptedModel([call("run_command", command=command), call("finish", summary="ok")])
    layer = os.environ.get("GG_SANDBOX")
    os.environ["GG_SANDBOX"] = "rlimit"
    try:
        result = gg.Agent(model=model, workspace=ws).run("t")
    finally:
        if layer is None:
            os.environ.pop("GG_SANDBOX")
        else:
            os.environ["GG_SANDBOX"] = layer
    assert (ws / "gg.toml").read_text() == text  # the agent could write it
    return result


def _runs(ws: Path, **kwargs: object) -> gg.RunResult:
    """A run that only finishes; with the file's own model spec when it names a server (a
    model passed here would override it, as the operator's --model does)."""
    text = (ws / "gg.toml").read_text() if (ws / "gg.toml").exists() else ""
    model = None if "openai-compat" in text else ScriptedModel([call("finish", summary="ok")])
    return gg.Agent(model=model, workspace=ws, **kwargs).run("t")  # type: ignore[arg-type]


def _streams(state: Path) -> int:
    return sum(1 for _ in state.glob("workspaces/*/runs/*/stream.jsonl"))


@pytest.mark.parametrize("weak", sorted(WEAK))
def test_an_agent_written_gg_toml_that_weakens_is_refused(
    workspace: Path, _state_home: Path, weak: str
) -> None:
    command = f"printf %s {shlex.quote(WEAK[weak])} > gg.toml"  # no gg.toml yet: any layer
    first = gg.Agent(
        model=ScriptedModel([call("run_command", command=command), call("finish", summary="ok")]),
        workspace=workspace,
    ).run("t")
    assert first.status == "ended"
    assert (workspace / "gg.toml").read_text() == WEAK[weak]  # the agent could create it
    before = _streams(_state_home)
    with pytest.raises(ConfigError, match="--trust-config") as refused:
        _runs(workspace)
    assert refused.value.key == "gg.toml"
    assert _streams(_state_home) == before  # nothing written
    with pytest.raises(ConfigError):
        _runs(workspace)  # still refused: refusing approves nothing
    if weak == "model-server":  # confirmed, the run starts and then asks that server
        assert _runs(workspace, trust_config=True).status == "stopped"
        return
    assert _runs(workspace, trust_config=True).status == "ended"  # the operator confirms
    assert _runs(workspace).status == "ended"  # and it stays approved


def test_an_existing_gg_toml_rewritten_to_weaken_is_refused_and_harmless_changes_pass(
    workspace: Path,
) -> None:
    (workspace / "gg.toml").write_text("[ceilings]\nmax_turns = 9\n")
    assert _runs(workspace).status == "ended"  # first run: the operator's file
    _agent_writes(workspace, "[ceilings]\nmax_turns = 7\n")  # harmless: warns, starts
    assert _runs(workspace).status == "ended"
    _agent_writes(workspace, "[ceilings]\nmax_turns = 7\n" + WEAK["host-commands"])
    with pytest.raises(ConfigError, match='commands = "host"'):
        _runs(workspace)


def test_an_operator_weakening_kept_unchanged_is_not_asked_again(workspace: Path) -> None:
    (workspace / "gg.toml").write_text(WEAK["host-commands"])
    assert _runs(workspace).status == "ended"  # a workspace's first run trusts its file
    assert _runs(workspace).status == "ended"
    _agent_writes(workspace, WEAK["host-commands"] + "[ceilings]\nmax_turns = 5\n")
    assert _runs(workspace).status == "ended"  # changed, but nothing newly weakening


def test_the_cli_refuses_with_exit_2_and_accepts_with_trust_config(
    workspace: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [{"name": "finish", "arguments": {"summary": "ok"}}]}]
    )
    _agent_writes(workspace, WEAK["trusted-hook"])
    gg_run = [
        sys.executable,
        "-m",
        "gg",
        "run",
        "t",
        "-w",
        str(workspace),
        "--model",
        f"scripted:{script}",
        "--json",
    ]
    refused = subprocess.run(gg_run, capture_output=True, text=True, env=os.environ.copy())
    assert refused.returncode == 2, refused.stderr
    assert "trusted = true" in refused.stderr and "--trust-config" in refused.stderr
    assert refused.stdout == ""
    ok = subprocess.run([*gg_run, "--trust-config"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["status"] == "ended"


def test_weakening_names_each_setting() -> None:
    none = settings_from_dict({})
    assert weakening(none) == []
    every = settings_from_dict(
        {
            "sandbox": {"commands": "host", "isolation": "rlimit"},
            "hooks": {"agent_stop": [{"command": "./c.sh", "trusted": True, "pass_env": ["X"]}]},
            "model": {"spec": "openai-compat:m@http://h/v1"},
            "board": {"store": "sqlite:x.db"},
        }
    )
    lines = weakening(every)
    assert len(lines) == 6 and any("./c.sh" in x for x in lines)


def test_a_board_merge_that_weakens_gg_toml_is_refused_on_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gg.board import Board, IssueState

    monkeypatch.setenv("GG_SANDBOX", "rlimit")  # under bwrap the worktree's gg.toml is read-only
    from gg.board.git import GIT_IDENTITY
    from gg.testing import FunctionModel

    def git(*args: str) -> str:
        env = {**os.environ, **GIT_IDENTITY}
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main")
    (repo / "greet.py").write_text('def greet(name):\n    return "hello " + name\n')
    (repo / "gg.toml").write_text("[ceilings]\nmax_turns = 12\n")
    git("add", "-A")
    git("commit", "-q", "-m", "initial")
    evil = "[ceilings]\nmax_turns = 12\n" + WEAK["host-commands"]
    attack = [
        call("run_command", command=f"printf %s {shlex.quote(evil)} > gg.toml"),
        call(
            "write_file",
            path="greet.py",
            content='def greet(name):\n    return f"Hello, {name}!"\n',
        ),
    ]

    def answer(messages: list[Message], tools: list[ToolSpec]) -> Reply:
        first = next(m.content for m in messages if m.role == "user")
        done = sum(1 for m in messages if m.role == "assistant")
        if first.startswith("Review"):
            return call("approve")
        if first.startswith("Implement") and done < len(attack):
            return attack[done]
        return call("finish", summary="done")

    board = Board(repo, model=FunctionModel(answer), reviewers=1, max_rounds=1, concurrency=1)
    board.add("Greet politely")
    result = board.run()
    assert [i.state for i in result.issues] == [IssueState.DONE]
    assert 'commands = "host"' in git("show", "main:gg.toml")  # the change rode the merge
    with pytest.raises(ConfigError, match='commands = "host"'):
        _runs(repo)
    with pytest.raises(ConfigError):
        Board(repo, model=FunctionModel(answer)).run()  # the board's next run too


def test_a_config_file_inside_the_workspace_counts_like_gg_toml(workspace: Path) -> None:
    (workspace / "ci.toml").write_text("[ceilings]\nmax_turns = 9\n")
    model = ScriptedModel([call("finish", summary="ok")])
    assert (
        gg.Agent(model=model, workspace=workspace, config=workspace / "ci.toml").run("t").status
        == "ended"
    )
    (workspace / "ci.toml").write_text("[ceilings]\nmax_turns = 9\n" + WEAK["host-commands"])
    with pytest.raises(ConfigError, match='commands = "host"'):
        gg.Agent(
            model=ScriptedModel([call("finish", summary="ok")]),
            workspace=workspace,
            config=workspace / "ci.toml",
        ).run("t")


def test_a_rewritten_trusted_hook_script_needs_confirmation(workspace: Path) -> None:
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "check.sh").write_text("exit 0\n")
    (workspace / "gg.toml").write_text(
        '[[hooks.agent_stop]]\ncommand = "sh ./scripts/check.sh"\ntrusted = true\n'
    )
    assert _runs(workspace).status == "ended"
    (workspace / "scripts" / "check.sh").write_text("id > /tmp/gg-pwned; exit 0\n")  # agent
    with pytest.raises(ConfigError, match="scripts/check.sh"):
        _runs(workspace)
    assert _runs(workspace, trust_config=True).status == "ended"


@pytest.mark.parametrize("change", ["removed", "on-error-pass", "fewer-roles"])
def test_a_weakened_gate_needs_confirmation(workspace: Path, change: str) -> None:
    hook = '[[hooks.agent_stop]]\ncommand = "true"\nroles = ["standard", "review"]\n'
    (workspace / "gg.toml").write_text(hook)
    assert _runs(workspace).status == "ended"
    weaker = {
        "removed": "[ceilings]\nmax_turns = 9\n",
        "on-error-pass": hook + 'on_error = "pass"\n',
        "fewer-roles": hook.replace('"standard", "review"', '"review"'),
    }[change]
    (workspace / "gg.toml").write_text(weaker)
    with pytest.raises(ConfigError, match="is gone"):
        _runs(workspace)


def test_a_first_run_inside_a_workspace_that_had_runs_is_not_trusted(workspace: Path) -> None:
    assert _runs(workspace).status == "ended"
    inner = workspace / "pkg"
    inner.mkdir()
    (inner / "gg.toml").write_text(WEAK["host-commands"])  # planted by the outer run's agent
    with pytest.raises(ConfigError, match="inside one that had runs"):
        _runs(inner)
    other = workspace.parent / "elsewhere"
    other.mkdir()
    (other / "gg.toml").write_text(WEAK["host-commands"])
    assert _runs(other).status == "ended"  # a first run anywhere else trusts its file
