"""A zygote's workspace (issue 11, issue 16): read-only programs, and a swapped directory.

The ``sandbox`` fixture runs a test under each isolation layer this machine supports.
Under ``unshare`` and ``rlimit`` each forked child opens the workspace by its path, so
what is at that path when it forks must be the directory the zygote was made for.
"""

from __future__ import annotations

import asyncio
import functools
import os
import select
import time
from pathlib import Path

import pytest
from sandbox_support import Arena
from test_warm_js import _run

from gg.sandbox import ProgramResult, Sandbox
from gg.sandbox import zygote as zygote_module
from gg.sandbox.zygote import Key, Zygote

_py = functools.partial(_run, language="python")
"""One Python program (``test_warm_js._run``, whose default is JavaScript)."""


_SET = """
import os
for where in ("f.txt", "."):
    try:
        os.setxattr(where, "user.planted", b"A" * 64)
        print("set", where)
    except OSError as exc:
        print("refused", where, exc.errno)
"""


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_read_only_program_writes_no_extended_attribute(
    sandbox: Sandbox, arena: Arena, warm: bool
) -> None:
    """Landlock does not cover extended attributes: seccomp refuses their writes to a
    reviewer's programs (every layer; under bubblewrap the bind refuses them first)."""
    if not sandbox.enforces_read_only():
        pytest.skip("nothing enforces a read-only workspace on this layer here")
    sandbox.warm = warm
    workspace = arena.workspace
    (workspace / "f.txt").write_text("x")

    async def go() -> ProgramResult:
        try:
            return await _py(sandbox, workspace, _SET, read_only=True)
        finally:
            await sandbox.aclose()

    result = asyncio.run(go())
    assert result.error is None, result
    assert "set" not in result.output.split(), result.output
    for where in (workspace / "f.txt", workspace):
        with pytest.raises(OSError):
            os.getxattr(where, "user.planted")


def test_a_workspace_swapped_away_and_back_as_a_child_forks_is_not_used(
    sandbox: Sandbox, arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another directory sits at the workspace's path while a zygote forks (its child opens
    that one), then the workspace comes back: that child is not used, and every program
    writes into the workspace."""
    workspace, other = arena.workspace, arena.root / "other"
    prime, swapped = Zygote.prime, list[bool]()

    async def prime_while_swapped(self: Zygote, sdk: str) -> None:
        if swapped or not self.programs:
            return await prime(self, sdk)
        swapped.append(True)
        workspace.rename(arena.root / "away")
        workspace.mkdir(mode=0o777)
        try:
            await prime(self, sdk)
            assert self.primed is not None  # its ready: the child opened the path by now
            select.select([self.primed.fds[1]], [], [], 10)
        finally:
            workspace.rename(other)
            (arena.root / "away").rename(workspace)

    async def go() -> list[ProgramResult]:
        sandbox.warm_up(workspace, language="python")
        out = []
        for n in range(4):
            program = f"open('made-{n}.txt', 'w').write('x')"
            out.append(await _py(sandbox, workspace, program))
        await sandbox.aclose()
        return out

    monkeypatch.setattr(Zygote, "prime", prime_while_swapped)
    results = asyncio.run(go())
    assert swapped and all(r.error is None for r in results), results
    assert sorted(p.name for p in workspace.iterdir()) == [f"made-{n}.txt" for n in range(4)]
    assert list(other.iterdir()) == []


def test_a_workspace_that_keeps_changing_costs_two_zygote_starts_at_most(
    default_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fresh zygote fails its workspace check: ``take`` gives up after two starts (it
    kept starting zygotes for its whole 20 s before), and the program runs cold."""
    starts, start = list[Zygote](), Zygote.start
    inode = iter(range(1, 1_000_000))

    async def counted(key: Key) -> Zygote:
        starts.append(zygote := await start(key))
        return zygote

    monkeypatch.setattr(Zygote, "start", staticmethod(counted))
    monkeypatch.setattr(zygote_module, "identity", lambda path: (0, next(inode)))

    async def go() -> ProgramResult:
        try:
            return await _py(default_sandbox, tmp_path, "print(6 * 7)")
        finally:
            await default_sandbox.aclose()

    began = time.monotonic()
    result = asyncio.run(go())
    assert (result.output, result.error) == ("42\n", None), result
    assert len(starts) <= 4 and time.monotonic() - began < 10, len(starts)  # two, and spares
