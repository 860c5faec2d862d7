"""Board hooks run only as hashed at run start, in every worktree (issue 9, finding F6).

On the board a session works in its own worktree (``.gg/worktrees/issue-N``, the
reviewers' ``issue-N-review``, the merge agent's ``merge``), and its agent-stop hooks
run there. The files a hook's command names must be the ones gg hashed in the
repository at run start: the agent rewrites, deletes, replaces by a link or moves the
script's directory in its worktree, and the gate does not run the hook but blocks
naming the file, failed (the diagnosis blames the hook). Under bubblewrap the files are
also bound read-only in the worktree. Played for real: real git, the real board, the
real sandbox, a trusted (host) and a sandboxed hook. ``on_error = "pass"``: a script
that merely fails to start would pass, so every block here is gg's own check.

Also (finding F1's chain): ``run_command`` with ``[sandbox] commands = "host"`` cannot
read gg's ``/proc/<pid>/environ`` (as root: no ``CAP_SYS_PTRACE`` and co.; as another
uid: gg is non-dumpable).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_hooks_boundary import KEY, _replies, _run_gg

import gg
from gg.board import Board, IssueState
from gg.board.git import GIT_IDENTITY
from gg.guard import Snapshot, host_command
from gg.testing import FunctionModel, call

ROOT = os.geteuid() == 0
BUGGY = 'def greet(name):\n    return "hello " + name\n'
FIXED = 'def greet(name):\n    return f"Hello, {name}!"\n'
CHECK = '#!/bin/sh\ngrep -q Hello greet.py || { echo "greet is not fixed" >&2; exit 2; }\n'
HOOK = "sh ./scripts/check.sh"


def plain_git(repo: Path, *args: str) -> str:
    """git for the test itself (a clean environment, gg's identity)."""
    env = {"PATH": os.defpath, "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1", **GIT_IDENTITY}
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, text=True, capture_output=True
    )
    return done.stdout.strip()


def make_repo(
    path: Path, *, trusted: bool, layer: str = "bwrap", roles: str = '["standard"]'
) -> Path:
    """A repository on ``main``: buggy greet.py, scripts/check.sh (blocks until it is fixed)
    bound as an agent-stop hook."""
    (path / "scripts").mkdir(parents=True)
    plain_git(path, "init", "-q", "-b", "main")
    (path / "greet.py").write_text(BUGGY)
    (path / "scripts" / "check.sh").write_text(CHECK)
    (path / ".gitignore").write_text("__pycache__/\n")
    (path / "gg.toml").write_text(
        f'[sandbox]\nisolation = "{layer}"\n[ceilings]\nmax_turns = 12\ngate_blocks = 2\n'
        f"[[hooks.agent_stop]]\ncommand = {json.dumps(HOOK)}\ntimeout_s = 60\n"
        f'on_error = "pass"\nroles = {roles}\n' + ("trusted = true\n" if trusted else "")
    )
    plain_git(path, "add", "-A")
    plain_git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def canary() -> Iterator[Path]:
    """A file the rewritten script would create (root's 0700 dir: only a host hook can)."""
    top = Path(tempfile.mkdtemp(prefix="gg-board-hooks-"))
    yield top / "PWNED"
    shutil.rmtree(top, ignore_errors=True)


def payload(canary: Path) -> str:
    """The agent's script: leaves the canary and passes the gate (greet.py unfixed)."""
    return f"#!/bin/sh\ntouch {canary} 2>/dev/null; exit 0\n"


def attack_calls(kind: str, canary: Path) -> list[gg.Reply]:
    """The implementer's moves for each way of swapping the hook's script."""
    evil = payload(canary)
    quoted = evil.replace("\n", "\\n")
    if kind == "rewritten":  # write_file refuses the hook's script; under unshare the shell's
        # write lands (no read-only bind there), and gg's check refuses the changed script
        return [
            call("write_file", path="scripts/check.sh", content=evil),
            call("run_command", command=f"printf '{quoted}' > scripts/check.sh; echo rc=$?"),
        ]
    if kind == "deleted":  # rm is refused (a mount point); moving its directory is not
        return [call("run_command", command="rm -f scripts/check.sh; mv scripts gone; ls")]
    if kind == "symlink":
        return [
            call(
                "run_command",
                command=(
                    f"mv scripts gone && mkdir scripts && printf '{quoted}' > evil.sh && "
                    "chmod +x evil.sh && ln -s ../evil.sh scripts/check.sh && ls -l scripts"
                ),
            )
        ]
    assert kind == "renamed"
    return [
        call(
            "run_command",
            command=(
                f"mv scripts gone && mkdir scripts && printf '{quoted}' > scripts/check.sh; echo ok"
            ),
        )
    ]


def job_of(messages: list[Any]) -> tuple[str, int]:
    """``("implement" | "review" | "merge", N)`` from a board session's first task line."""
    first = next(m.content for m in messages if m.role == "user")
    match = re.match(r"(Implement|Review|Merge) issue #(\d+)", first)
    assert match, first[:80]
    return match[1].lower(), int(match[2])


def board_model(
    implementer: dict[int, list[gg.Reply]], merger: list[gg.Reply] | None = None
) -> FunctionModel:
    """Implementers play their issue's calls then finish; reviewers approve; the merge
    agent plays ``merger`` then finishes."""

    def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        job, n = job_of(messages)
        k = sum(1 for m in messages if m.role == "assistant")
        if job == "review":
            return call("approve")
        plan = implementer.get(n, []) if job == "implement" else (merger or [])
        return plan[k] if k < len(plan) else call("finish", summary="done")

    return FunctionModel(answer)


def rewrite(canary: Path) -> gg.Reply:
    """The agent's own shell rewrites the script (lands where no read-only bind is)."""
    quoted = payload(canary).replace("\n", "\\n")
    return call("run_command", command=f"printf '{quoted}' > scripts/check.sh; echo rc=$?")


def honest() -> list[gg.Reply]:
    return [call("write_file", path="greet.py", content=FIXED)]


def stream_events(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(result.stream).read_text().splitlines()]


def assert_bypass_refused(repo: Path, result: Any, canary: Path, *, blocked: int) -> None:
    """Issue 1 stopped on gg's own check; the script never ran; main has none of it."""
    events = stream_events(result)
    issue = next(i for i in result.issues if i.number == 1)
    assert issue.state is IssueState.STUCK, (issue.state, issue.diagnosis)
    assert "scripts/check.sh" in (issue.diagnosis or "") and "broken" in issue.diagnosis
    blocks = [e for e in events if e["type"] == "gate_blocked" and e["hook"] == HOOK]
    assert len(blocks) >= blocked, blocks
    for block in blocks:
        assert "was not run" in block["reason"] and "scripts/check.sh" in block["reason"]
        assert block["failed"] is True
    assert not canary.exists(), "the rewritten hook script ran"
    assert plain_git(repo, "show", "main:scripts/check.sh") + "\n" == CHECK
    log = plain_git(repo, "log", "--format=%B", "main")
    assert "Issue #1:" not in log and "Merge gg/issue-1" not in log, log


@pytest.mark.skipif(not ROOT, reason="bubblewrap's dedicated uid and a host hook as root")
@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "sandboxed"])
@pytest.mark.parametrize("kind", ["rewritten", "deleted", "symlink", "renamed"])
def test_implementer_cannot_swap_the_hook_script(
    tmp_path: Path, canary: Path, kind: str, trusted: bool
) -> None:
    # under unshare the agent's shell can move and rewrite (no read-only binds there), so
    # gg's own check of the scripts is what stops it; bwrap stops the moves themselves
    repo = make_repo(tmp_path / "repo", trusted=trusted, layer="unshare")
    model = board_model({1: attack_calls(kind, canary), 2: honest()})
    board = Board(repo, model=model, reviewers=1, max_rounds=1, concurrency=1)
    board.add("Greet politely")
    board.add("Greet politely, really")
    result = board.run()
    assert_bypass_refused(repo, result, canary, blocked=2)
    events = stream_events(result)
    first = next(e for e in events if e["type"] == "tool_result")
    if kind == "rewritten":  # the host-side write is refused under every layer
        assert not first["ok"] and "gg's own configuration" in first["excerpt"], first
    # the same hook, unchanged, ran in issue 2's worktree and in the merge worktree: done
    second = next(i for i in result.issues if i.number == 2)
    assert second.state is IssueState.DONE, second.diagnosis
    assert plain_git(repo, "show", "main:greet.py") + "\n" == FIXED


@pytest.mark.skipif(not ROOT, reason="bubblewrap's dedicated uid and a host hook as root")
@pytest.mark.parametrize("kind", ["deleted", "symlink", "renamed"])
def test_under_bwrap_the_scripts_directory_cannot_be_moved(
    tmp_path: Path, canary: Path, kind: str
) -> None:
    repo = make_repo(tmp_path / "repo", trusted=True)
    board = Board(
        repo,
        model=board_model({1: attack_calls(kind, canary)}),
        reviewers=1,
        max_rounds=1,
        concurrency=1,
    )
    board.add("Greet politely")
    result = board.run()
    first = next(e for e in stream_events(result) if e["type"] == "tool_result")
    assert "Device or resource busy" in first["excerpt"], first  # a mount point: no mv/rm
    assert not canary.exists()
    issue = result.issues[0]  # the honest, unchanged hook blocked: greet is not fixed
    assert issue.state is IssueState.STUCK and "greet is not fixed" in (issue.diagnosis or "")


@pytest.mark.skipif(not ROOT, reason="a host hook as root, the sandbox's dedicated uid")
def test_unshare_layer_checks_a_deleted_script_too(tmp_path: Path, canary: Path) -> None:
    # no read-only bind here: the sandboxed rm succeeds, the gate's check still refuses
    repo = make_repo(tmp_path / "repo", trusted=True, layer="unshare")
    model = board_model({1: [call("run_command", command="rm scripts/check.sh; echo rc=$?")]})
    board = Board(repo, model=model, reviewers=1, max_rounds=1, concurrency=1)
    board.add("Greet politely")
    result = board.run()
    first = next(e for e in stream_events(result) if e["type"] == "tool_result")
    assert "rc=0" in first["excerpt"], first
    assert_bypass_refused(repo, result, canary, blocked=2)


@pytest.mark.skipif(not ROOT, reason="a host hook as root")
def test_reviewer_hook_runs_only_the_hashed_script(tmp_path: Path, canary: Path) -> None:
    # the hook binds reviewers only: the implementer commits a rewritten script, and the
    # reviewers' worktree (the branch's tip) holds it
    repo = make_repo(tmp_path / "repo", trusted=True, roles='["review"]', layer="unshare")
    evil = rewrite(canary)
    board = Board(repo, model=board_model({1: [evil]}), reviewers=1, max_rounds=1, concurrency=1)
    board.add("Greet politely")
    result = board.run()
    assert plain_git(repo, "show", "gg/issue-1:scripts/check.sh") + "\n" == payload(canary)
    assert_bypass_refused(repo, result, canary, blocked=2)
    assert "reviewer" in (result.issues[0].diagnosis or "")


@pytest.mark.skipif(not ROOT, reason="a host hook as root")
def test_merge_agent_cannot_swap_the_hook_script(tmp_path: Path, canary: Path) -> None:
    repo = make_repo(tmp_path / "repo", trusted=True, layer="unshare")
    before = plain_git(repo, "rev-parse", "main")
    evil = rewrite(canary)
    board = Board(
        repo,
        model=board_model({1: honest()}, merger=[evil]),
        reviewers=1,
        max_rounds=1,
        concurrency=1,
    )
    board.add("Greet politely")
    result = board.run()
    issue = result.issues[0]
    assert "merge agent" in (issue.diagnosis or "")
    assert plain_git(repo, "rev-parse", "main") == before  # nothing merged
    events = stream_events(result)
    passed = [e for e in events if e["type"] == "gate_passed"]
    assert passed, "the implementer's gate ran the unchanged hook in its worktree and passed"
    assert_bypass_refused(repo, result, canary, blocked=2)


def test_tampered_compares_a_worktree_with_the_run_start_digests(tmp_path: Path) -> None:
    repo, tree = tmp_path / "repo", tmp_path / "repo" / ".gg" / "worktrees" / "issue-1"
    for ws in (repo, tree):
        (ws / "scripts").mkdir(parents=True)
        (ws / "scripts" / "check.sh").write_text(CHECK)
    command = f"{HOOK} && sh {repo}/scripts/check.sh"
    snap = Snapshot.take(repo, configs=["gg.toml"], commands=[command])
    assert snap.inside() == (repo.resolve() / "scripts" / "check.sh",)
    assert snap.tampered(command, workspace=tree) == []
    (tree / "scripts" / "check.sh").write_text("exit 0\n")
    assert snap.tampered(command) == []  # the repository's own copy is unchanged
    assert snap.tampered(command, workspace=tree) == [
        "'scripts/check.sh' in this session's workspace differs from the one this run started with"
    ]
    (tree / "scripts" / "check.sh").unlink()
    (tree / "scripts" / "check.sh").symlink_to(repo / "scripts" / "check.sh")  # same bytes
    assert "removed or replaced" in snap.tampered(command, workspace=tree)[0]
    (tree / "scripts" / "check.sh").unlink()
    (tree / "scripts").rename(tree / "gone")
    (tree / "scripts").symlink_to(tree / "gone")  # a linked directory on the way
    (tree / "gone" / "check.sh").write_text(CHECK)
    assert "removed or replaced" in snap.tampered(command, workspace=tree)[0]
    (repo / "scripts" / "check.sh").write_text("exit 0\n")  # the absolute word: the repo's
    assert "'scripts/check.sh' changed during this run" in snap.tampered(command, workspace=tree)


# ---------------------------------------------------------------- F1: host-mode run_command

PEEK = (
    "grep CapBnd /proc/self/status; id -u; tr '\\0' ' ' < /proc/$PPID/cmdline; echo; "
    f"if tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | grep -q {KEY[:8]}; "
    "then echo LEAKED; else echo SAFE; fi"
)


def _host_workspace() -> Path:
    top = Path(tempfile.mkdtemp(prefix="gg-hostcmd-", dir="/tmp"))
    top.chmod(0o755)
    ws = top / "ws"
    ws.mkdir()
    (ws / "gg.toml").write_text('[sandbox]\ncommands = "host"\n')
    return ws


def _peek(as_nobody: bool) -> tuple[str, dict[str, Any]]:
    ws = _host_workspace()
    try:
        state = None
        if as_nobody:
            state = ws.parent / "state"
            state.mkdir(mode=0o700)
            for path in (ws, state, *ws.iterdir()):
                os.chown(path, 65534, 65534)
        result, _, events = _run_gg(
            ws,
            _replies(("run_command", {"command": PEEK}), ("finish", {"summary": "done"})),
            as_nobody=as_nobody,
            state=state,
        )
        out = next(e for e in events if e["type"] == "tool_result")["excerpt"]
        assert next(e for e in events if e["type"] == "run_started")["commands"] == "host"
        return out, result
    finally:
        shutil.rmtree(ws.parent, ignore_errors=True)


@pytest.mark.skipif(not ROOT or not shutil.which("setpriv"), reason="root's bounding set")
def test_host_run_command_as_root_cannot_read_gg_environ() -> None:
    out, result = _peek(as_nobody=False)
    assert result["status"] == "ended", result
    lines = out.splitlines()
    assert "0" in lines  # really root, really on the host
    assert "-m gg run" in out  # $PPID is gg: the probe looked at gg itself
    bounding = int(next(ln for ln in lines if ln.startswith("CapBnd")).split()[1], 16)
    for bit in (19, 21, 38):  # CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON
        assert not bounding & (1 << bit), hex(bounding)
    assert bounding & 1  # CAP_CHOWN kept: a speed bump, not a boundary
    assert "SAFE" in lines and "LEAKED" not in out and KEY not in out, out


@pytest.mark.skipif(
    not ROOT or not shutil.which("setpriv") or not shutil.which("unshare"),
    reason="needs root to become uid 65534 in a private mount namespace",
)
def test_host_run_command_as_non_root_cannot_read_gg_environ() -> None:
    out, _ = _peek(as_nobody=True)
    assert "65534" in out.splitlines() and "-m gg run" in out, out
    assert "SAFE" in out.splitlines() and "LEAKED" not in out and KEY not in out, out


def test_host_command_is_unchanged_for_a_non_root_gg() -> None:
    wrapped = host_command("echo 'a b'")
    if ROOT and shutil.which("setpriv", path="/usr/bin:/bin"):
        assert "--bounding-set=-sys_ptrace,-sys_admin,-perfmon" in wrapped
        done = subprocess.run(["/bin/sh", "-c", wrapped], capture_output=True, text=True)
        assert done.stdout == "a b\n"
    else:
        assert wrapped == "echo 'a b'"
