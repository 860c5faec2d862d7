"""JavaScript from a warm zygote (issue 11): each program's Deno is exec'd by a forked child.

The zygote (``gg.sandbox.zygote``, a ``"javascript"`` key) forks a child per
program; the child applies the program's confinement and execs Deno with
``runner.js``, which waits for its program. These tests cover what is particular
to that path; the black-box ones of ``test_warm_js.py`` (no state leaks, a program
that breaks its Deno, compile errors, protected files) run on it too, as it is the
default. The ``sandbox`` fixture runs a test under each isolation layer here.
"""

from __future__ import annotations

import asyncio
import errno
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sandbox_support import Arena
from test_warm_js import _WATCH, _answer, _run

from gg.errors import SandboxError
from gg.sandbox import Isolation, ProgramResult, Sandbox, launch
from gg.sandbox.zygote import Key, Zygote, _below


def _zygotes(sandbox: Sandbox, workspace: Path) -> list[Zygote]:
    """The JavaScript zygotes ready for ``workspace`` (each with a Deno waiting)."""
    key = sandbox._key(workspace.resolve(), "javascript")
    return list(sandbox._pool._ready.get(key, []))


def _once(sandbox: Sandbox, workspace: Path, program: str) -> ProgramResult:
    """Run one JavaScript program, then close the sandbox."""

    async def go() -> ProgramResult:
        try:
            return await _run(sandbox, workspace, program)
        finally:
            await sandbox.aclose()

    return asyncio.run(go())


async def _until_ready(sandbox: Sandbox, workspace: Path, count: int = 2) -> list[Zygote]:
    deadline = time.monotonic() + 20
    while len(ready := _zygotes(sandbox, workspace)) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return ready


def test_each_program_gets_a_fresh_deno_from_a_zygote(sandbox: Sandbox, tmp_path: Path) -> None:
    """Three programs, three Deno processes, none of them started outside a zygote."""

    async def go() -> tuple[list[ProgramResult], int]:
        sandbox.warm_up(tmp_path, language="javascript")
        assert len(await _until_ready(sandbox, tmp_path)) == 2
        spares = len(sandbox._spares._ready)
        out = [
            await _run(sandbox, tmp_path, "console.log(performance.timeOrigin, Deno.cwd());")
            for _ in "abc"
        ]
        await sandbox.aclose()
        return out, spares

    results, spares = asyncio.run(go())
    assert all(r.error is None for r in results), results
    starts = [r.output.split()[0] for r in results]  # when each process began (pids repeat:
    assert len(set(starts)) == 3, starts  # every zygote has a pid namespace of its own)
    assert {r.output.split()[1] for r in results} == {str(tmp_path.resolve())}, results
    assert sandbox.forked_js and spares == 0, "a started-Deno spare was used instead"


def test_a_waiting_forked_deno_never_names_the_workspace(sandbox: Sandbox, arena: Arena) -> None:
    """``/proc`` is scanned without pause while zygotes start and fork, and their Deno waits.

    No program runs meanwhile (its own Deno enters the workspace once its go came).
    """
    workspace = arena.workspace.resolve()
    watcher = subprocess.Popen(
        [sys.executable, "-c", _WATCH, str(workspace), str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip

    async def go() -> int:
        sandbox.warm_up(workspace, language="javascript")
        ready = len(await _until_ready(sandbox, workspace))
        await asyncio.sleep(0.5)  # Deno is up and waits for its go
        return ready

    try:
        ready = asyncio.run(go())
        found, _ = watcher.communicate(timeout=60)
    finally:
        watcher.kill()

    async def after() -> ProgramResult:
        result = await _run(sandbox, workspace, "console.log(Deno.cwd());")
        await sandbox.aclose()
        return result

    assert ready == 2
    assert [line for line in found.splitlines() if line] == []
    assert asyncio.run(after()).output == f"{workspace}\n"


def test_a_zygote_for_a_replaced_workspace_is_not_used(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    """A workspace removed and made again at its path is another directory (both languages)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def go() -> list[ProgramResult]:
        out = []
        for language, write, listing in (
            ("javascript", "Deno.writeTextFileSync('new.txt', 'y');",
             "console.log([...Deno.readDirSync('.')].map((e) => e.name).join());"),
            ("python", "open('new.txt', 'w').write('y')",
             "import os; print(','.join(sorted(os.listdir('.'))))"),
        ):  # fmt: skip
            default_sandbox.warm_up(workspace, language=language)  # type: ignore[arg-type]
            await asyncio.sleep(1.0)
            os.rename(workspace, tmp_path / f"gone-{language}")
            workspace.mkdir()
            for program in (listing, write):
                out.append(await default_sandbox.run(
                    program, language=language, workspace=workspace, tools=[],  # type: ignore[arg-type]
                    handler=_answer,
                ))  # fmt: skip
            assert (workspace / "new.txt").read_text() == "y", language
        await default_sandbox.aclose()
        return out

    js_list, js_write, py_list, py_write = asyncio.run(go())
    assert (js_list.output, js_write.error) == ("\n", None), (js_list, js_write)
    assert (py_list.output, py_write.error) == ("\n", None), (py_list, py_write)


def test_a_dead_waiting_deno_is_replaced_not_used(default_sandbox: Sandbox, tmp_path: Path) -> None:
    """The Deno a zygote's child exec'd is killed while it waits: the program still runs."""

    async def go() -> ProgramResult:
        default_sandbox.warm_up(tmp_path, language="javascript")
        for zygote in await _until_ready(default_sandbox, tmp_path):
            assert zygote.primed is not None
            child = zygote.primed.child
            deadline = time.monotonic() + 10
            while child.poll() is None and time.monotonic() < deadline:
                for pid in _below(zygote.proc.pid):
                    if b"runner.js" in _cmdline(pid):
                        os.kill(pid, 9)
                await asyncio.sleep(0.01)
        result = await _run(default_sandbox, tmp_path, "console.log(6 * 7);")
        await default_sandbox.aclose()
        return result

    result = asyncio.run(go())
    assert (result.output, result.error) == ("42\n", None), result


def test_programs_use_started_denos_when_no_zygote_starts(
    default_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JavaScript zygote that cannot start: the program runs in a Deno started for it."""

    async def fail(key: Key) -> Zygote:
        raise SandboxError("no zygote today")

    monkeypatch.setattr(Zygote, "start", staticmethod(fail))

    async def go() -> list[ProgramResult]:
        out = [await _run(default_sandbox, tmp_path, f"console.log({n});") for n in (1, 2)]
        await default_sandbox.aclose()
        return out

    one, two = asyncio.run(go())
    assert (one.output, two.output, two.error) == ("1\n", "2\n", None), (one, two)
    assert not default_sandbox.forked_js


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_a_program_that_replaces_deno_exit_still_ends(sandbox: Sandbox, tmp_path: Path) -> None:
    """The runner keeps its own ``Deno.exit``: the turn ends when the program does."""

    async def go() -> tuple[ProgramResult, float]:
        started = time.monotonic()
        result = await _run(sandbox, tmp_path, "Deno.exit = () => {};\nconsole.log(1);")
        took = time.monotonic() - started
        await sandbox.aclose()
        return result, took

    result, took = asyncio.run(go())
    assert (result.output, result.error) == ("1\n", None), result
    assert took < sandbox.limits.wall_s / 2, took


def test_a_program_file_that_cannot_be_written_runs_it_elsewhere(
    default_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under the zygote's run directory: nothing of the program ran there, so a
    Deno started for it runs it (and would report a full disk of its own)."""

    def full(self: Zygote, primed: object, program: str, sdk: str) -> bytes:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Zygote, "_go_js", full)
    result = _once(default_sandbox, tmp_path, "console.log(6 * 7);")
    assert (result.output, result.error) == ("42\n", None), result


def test_a_workspace_swapped_while_its_zygote_starts_is_not_used(
    default_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replaced between the zygote's bind and its identity check: the zygote is not used."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    swaps: list[str] = []

    def plan_then_swap(spec: Any) -> Any:
        made = launch.plan(spec)
        if spec.mode == "zygote" and not swaps:
            os.rename(workspace, tmp_path / "old")
            workspace.mkdir()
            os.chmod(workspace, 0o777)  # gg shared the old one (its ACL) before the swap
            swaps.append("swapped")
        return made

    monkeypatch.setattr("gg.sandbox.zygote.plan", plan_then_swap)
    result = _once(default_sandbox, workspace, "Deno.writeTextFileSync('new.txt', 'y');")
    assert swaps and result.error is None, result
    assert (workspace / "new.txt").exists() and not (tmp_path / "old" / "new.txt").exists(), sorted(
        str(p) for p in tmp_path.rglob("*")
    )


_WRITES = {
    "javascript": "Deno.writeTextFileSync('made.txt', 'x'); console.log('wrote');",
    "python": "open('made.txt', 'w').write('x'); print('wrote')",
}


@pytest.mark.parametrize("language", ["javascript", "python"])
def test_read_only_programs_fork_from_a_read_only_zygote(
    sandbox: Sandbox, arena: Arena, language: str
) -> None:
    """A reviewer's programs (issue 16) run warm too, from a zygote of their own whose
    workspace is read-only; a writer's programs of the same workspace from another."""
    tmp_path = arena.workspace  # parents the slot uid can search (Deno opens paths whole)
    if not sandbox.enforces_read_only():
        pytest.skip("nothing enforces a read-only workspace on this layer here")

    async def go() -> tuple[list[ProgramResult], list[bool], int]:
        out, seen = [], []
        for read_only in (False, True, True, False, True):
            made = tmp_path / "made.txt"
            made.unlink(missing_ok=True)
            out.append(await sandbox.run(
                _WRITES[language], language=language, workspace=tmp_path,  # type: ignore[arg-type]
                tools=[], handler=_answer, read_only=read_only,
            ))  # fmt: skip
            seen.append(made.exists())
        keys = {k for k in sandbox._pool._ready if k.read_only and k.language == language}
        spares = len(sandbox._spares._ready)
        await sandbox.aclose()
        return out, seen, len(keys) + spares * 100

    results, seen, keys = asyncio.run(go())
    assert seen == [True, False, False, True, False], (seen, results)
    assert [r.error is None for r in results] == [True, False, False, True, False], results
    assert keys == 1, "no read-only zygote, or a started-Deno spare was used"


def test_a_workspace_closed_off_before_its_program_is_an_error_not_run_in_root(
    sandbox: Sandbox, arena: Arena
) -> None:
    """The workspace's parent loses its search permission while a Deno waits (it started
    in ``/``): the program is not run elsewhere; the turn says why, the next one runs."""
    if sandbox.isolation is Isolation.BWRAP or os.geteuid() != 0:
        pytest.skip("bubblewrap makes the parents itself; only root drops to a slot uid")
    workspace = arena.workspace.resolve()
    parent = workspace.parent

    async def go() -> list[ProgramResult]:
        sandbox.warm_up(workspace, language="javascript")
        for zygote in await _until_ready(sandbox, workspace):  # confined (its ready came):
            assert zygote.primed is not None  # both Denos wait in /
            ready = zygote.primed.fds[1]
            assert select.select([ready], [], [], 10)[0], "a child never said ready"
        os.chmod(parent, 0o700)
        try:
            return [await _run(sandbox, workspace, "console.log(Deno.cwd());") for _ in "abc"]
        finally:
            os.chmod(parent, 0o755)
            await sandbox.aclose()

    *waited, last = asyncio.run(go())
    for result in waited:  # started before the change: an error, never run in /
        assert result.output == "", result
        assert "could not enter its workspace" in str(result.error), result
    assert (last.output, last.error) == (f"{workspace}\n", None), last  # entered as root
