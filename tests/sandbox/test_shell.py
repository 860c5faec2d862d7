"""The sandboxed shell behind the run_command built-in (issue 3 item 7, SPEC M3)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from sandbox_support import Arena, TcpServer, leftover_processes

from gg.sandbox import Sandbox


async def test_runs_in_the_workspace(sandbox: Sandbox, arena: Arena, secret_env: str) -> None:
    result = await sandbox.run_shell(
        "echo hi > made.txt && cat made.txt && pwd && env && exit 3",
        workspace=arena.workspace,
        timeout_s=10,
    )
    assert result.exit_code == 3 and not result.timed_out
    assert result.output.startswith(f"hi\n{arena.workspace}\n")
    assert secret_env not in result.output
    assert (arena.workspace / "made.txt").read_text() == "hi\n"


async def test_cannot_leave_the_workspace(
    sandbox: Sandbox, arena: Arena, tcp_server: TcpServer
) -> None:
    command = (
        f"cat {arena.canary}; echo x >> {arena.canary}; touch {arena.canary.parent}/new; "
        f"(exec 3<>/dev/tcp/127.0.0.1/{tcp_server.port}) 2>/dev/null && echo CONNECTED; true"
    )
    result = await sandbox.run_shell(command, workspace=arena.workspace, timeout_s=10)
    assert arena.secret not in result.output
    assert "CONNECTED" not in result.output
    assert arena.canary_intact() and not (arena.canary.parent / "new").exists()
    assert tcp_server.connections == 0


async def test_timeout_kills_the_tree(sandbox: Sandbox, arena: Arena) -> None:
    result = await sandbox.run_shell(
        f"(sleep 100; : {arena.marker}) & sleep 100", workspace=arena.workspace, timeout_s=1
    )
    assert result.timed_out and result.exit_code != 0
    assert leftover_processes(arena.marker) == []


async def test_long_output_keeps_head_and_tail(default_sandbox: Sandbox, arena: Arena) -> None:
    result = await default_sandbox.run_shell(
        "echo START; seq 1 200000; echo END", workspace=arena.workspace, timeout_s=20
    )
    assert result.exit_code == 0
    assert result.output.startswith("START\n") and result.output.endswith("END\n")
    assert "[gg: output cut:" in result.output
    assert len(result.output) < default_sandbox.limits.output_bytes + 200


async def test_git_works_in_a_workspace_gg_owns(sandbox: Sandbox, arena: Arena) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(arena.workspace)], check=True)
    (arena.workspace / "a.txt").write_text("hi\n")
    result = await sandbox.run_shell(
        "git status --short && git add a.txt && git status --short",
        workspace=arena.workspace,
        timeout_s=20,
    )
    assert (result.exit_code, result.output) == (0, "?? a.txt\nA  a.txt\n"), result
