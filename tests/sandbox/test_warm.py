"""The warm sandbox (issue 11): programs of one sandbox share a zygote, never state.

Every test here runs on the forked path (the default for Python); the ``sandbox``
fixture runs it under each isolation layer this machine supports.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import select
import signal
import time
from pathlib import Path

import pytest
from sandbox_support import leftover_processes

from gg.errors import SandboxError
from gg.models.base import ToolSpec
from gg.sandbox import CallAnswer, CallRequest, ProgramResult, Sandbox
from gg.sandbox import zygote as zygote_module
from gg.sandbox.zygote import ZygoteChild


async def _answer(request: CallRequest) -> CallAnswer:
    return CallAnswer(ok=True, value=None)


def _runs(sandbox: Sandbox, workspace: Path, programs: list[str]) -> list[ProgramResult]:
    async def go() -> list[ProgramResult]:
        return [
            await sandbox.run(p, language="python", workspace=workspace, tools=[],
                              handler=_answer)
            for p in programs
        ]  # fmt: skip

    return asyncio.run(go())


def test_no_state_leaks_between_programs(sandbox: Sandbox, tmp_path: Path) -> None:
    first = (
        "import os, builtins, subprocess, sys\nbuiltins.LEAK = 1\nGLOBAL = 2\n"
        "fd = os.open('/dev/null', os.O_RDONLY)\nos.dup2(fd, 77)\n"
        "p = subprocess.Popen(['sleep', '30'])\nimport tempfile\n"
        "open(os.path.join(tempfile.gettempdir(), 'left'), 'w').write('x')\n"
        "sys.modules['leaky'] = 1\nprint('pid', os.getpid())"
    )
    second = (
        "import os, builtins, sys, tempfile\n"
        "print(hasattr(builtins, 'LEAK'), 'GLOBAL' in globals(), 'leaky' in sys.modules)\n"
        "try:\n    os.fstat(77)\n    print('fd 77 open')\nexcept OSError:\n    print('closed')\n"
        "print(os.path.exists(os.path.join(tempfile.gettempdir(), 'left')))\n"
        "try:\n    pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "except OSError:\n    pids = []  # no view of /proc here (Landlock)\n"
        "print([open(f'/proc/{p}/cmdline').read() for p in pids if os.stat('/proc/' + p).st_uid"
        " == os.getuid()])"
    )
    one, two = _runs(sandbox, tmp_path, [first, second])
    assert one.error is None, one
    assert two.error is None, two
    lines = two.output.splitlines()
    assert lines[0] == "False False False", two.output
    assert lines[1] == "closed", two.output
    assert lines[2] == "False", two.output
    assert "sleep" not in lines[3], two.output


def test_no_process_outlives_its_turn(sandbox: Sandbox, tmp_path: Path) -> None:
    """A detached process the program left is dead when ``run`` returns, not only later."""
    leaver = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        while True:\n"
        "            with open('beat', 'a') as f:\n"
        "                f.write('.')\n"
        "            time.sleep(0.002)\n"
        "    os._exit(0)\n"
        "while not os.path.exists('beat'):\n"
        "    time.sleep(0.001)\n"
    )
    (result,) = _runs(sandbox, tmp_path, [leaver])
    assert result.error is None, result
    size = (tmp_path / "beat").stat().st_size
    time.sleep(0.3)
    assert (tmp_path / "beat").stat().st_size == size
    (after,) = _runs(sandbox, tmp_path, ["print(6 * 7)"])
    assert after.output.strip() == "42", after


def test_each_program_has_its_own_random_state(sandbox: Sandbox, tmp_path: Path) -> None:
    draw = "import random\nprint(random.getrandbits(64))"
    results = _runs(sandbox, tmp_path, [draw, draw, draw])
    values = [r.output.strip() for r in results]
    assert all(v.isdigit() for v in values), results
    assert len(set(values)) == 3, values


def test_a_program_that_kills_its_zygote_gets_an_error_and_the_next_runs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    killers = [
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "x = bytearray(1 << 34)",
    ]
    for killer in killers:
        bad, good = _runs(sandbox, tmp_path, [killer, "print(6 * 7)"])
        assert bad.error is not None, (killer, bad)
        assert good.error is None and good.output.strip() == "42", (killer, good)


def test_programs_run_cold_when_no_warm_sandbox_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(cls: type[zygote_module.Zygote], key: zygote_module.Key) -> None:
        raise SandboxError("no zygote here")

    monkeypatch.setattr(zygote_module.Zygote, "start", classmethod(refuse))
    sandbox = Sandbox()
    one, two = _runs(sandbox, tmp_path, ["print(6 * 7)", "import os\nprint(os.getpid())"])
    assert one.output.strip() == "42", one
    assert two.error is None, two
    assert sandbox.warm is False  # tried once, then cold without asking again


def test_warm_up_starts_a_zygote_before_the_first_program(tmp_path: Path) -> None:
    async def go() -> ProgramResult:
        async with Sandbox() as sandbox:
            sandbox.warm_up(tmp_path, language="python")
            await asyncio.sleep(0)
            pool = sandbox._pool
            key = sandbox._key(tmp_path.resolve())
            pending = pool._pending.get(key, set())
            assert pending, "warm_up started nothing"
            await asyncio.wait(pending)
            assert pool._ready.get(key), "the started zygotes are not ready"
            return await sandbox.run("print(6 * 7)", language="python", workspace=tmp_path,
                                     tools=[], handler=_answer)  # fmt: skip

    result = asyncio.run(go())
    assert result.output.strip() == "42", result


def test_a_posix_message_queue_is_refused_on_the_warm_path(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Forks of one zygote share its IPC namespace: POSIX queues are denied (adversary F1)."""
    make = (
        "import ctypes, os\nrt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
        "q = rt.mq_open(b'/ggq', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
        "print('queue', q, ctypes.get_errno())\n"
        "if q >= 0:\n    rt.mq_send(q, b'from-one', 8, 0)\n"
    )
    see = (
        "import ctypes, os\nrt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
        "q = rt.mq_open(b'/ggq', os.O_RDWR, 0, None)\nprint('open', q)\n"
    )
    one, two = _runs(sandbox, tmp_path, [make, see])
    assert one.error is None and two.error is None, (one, two)
    assert one.output.split()[:2] == ["queue", "-1"], one.output  # EPERM: never made
    assert two.output.split() == ["open", "-1"], two.output


NOOP = ToolSpec(name="noop", description="Do nothing.", parameters={"type": "object"})


def test_a_program_gets_its_own_sdk_not_the_one_its_child_bound(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The waiting child binds the last program's SDK; a program with other tools gets its own."""
    call = "print(gg.tools.noop())"

    async def go() -> list[ProgramResult]:
        out = []
        for tools in ([], [NOOP], [NOOP], []):
            out.append(await sandbox.run(call, language="python", workspace=tmp_path,
                                         tools=tools, handler=_answer))  # fmt: skip
        return out

    without, first, second, again = asyncio.run(go())
    assert without.error is not None and "noop" in without.error, without
    assert first.error is None and first.calls == 1, first
    assert second.error is None and second.calls == 1, second
    assert again.error is not None and "noop" in again.error and again.calls == 0, again


def test_a_dead_waiting_zygote_is_replaced_not_used(tmp_path: Path) -> None:
    """Zygotes killed while their child waits for a program: the next program runs anyway."""

    async def go() -> tuple[ProgramResult, ProgramResult, int]:
        async with Sandbox() as sandbox:
            run = functools.partial(sandbox.run, language="python", workspace=tmp_path,
                                    tools=[], handler=_answer)  # fmt: skip
            before = await run("print(6 * 7)")
            pool, key = sandbox._pool, sandbox._key(tmp_path.resolve())
            await asyncio.wait(pool._pending.get(key, set()))
            waiting = list(pool._ready.get(key, []))
            for zygote in waiting:
                os.killpg(zygote.proc.pid, signal.SIGKILL)
                zygote.proc.wait()
            after = await run("print(6 * 7)")
            return before, after, len(waiting)

    before, after, killed = asyncio.run(go())
    assert killed >= 1
    assert before.output.strip() == "42", before
    assert after.error is None and after.output.strip() == "42", after


def test_a_forged_exit_note_does_not_end_a_running_program(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The runner's exit note is only a hint: the zygote reports an end once nothing runs.

    The program does what the runner does as it ends (closes its pipes to gg, writes the
    note: fd 5 on the forked path, a bad descriptor on a cold one), then goes on, a thread
    of it writing all along: ``run`` returns only after the program's last write, and
    nothing of it writes after.
    """
    forger = (
        "import os, threading, time\n"
        "def beat():\n    while True:\n"
        "        with open('beat', 'a') as f:\n            f.write('.')\n"
        "        time.sleep(0.001)\n"
        "threading.Thread(target=beat, daemon=True).start()\n"
        "os.closerange(0, 5)\n"
        "try:\n    os.write(5, b'\\x00')\nexcept OSError:\n    pass\n"
        "time.sleep(0.3)\n"
        "open('late', 'w').write('x')\n"
    )
    (result,) = _runs(sandbox, tmp_path, [forger])
    assert result.error is not None, result  # it closed its channel: no result came
    assert (tmp_path / "late").exists(), result
    size = (tmp_path / "beat").stat().st_size
    time.sleep(0.1)
    assert (tmp_path / "beat").stat().st_size == size


def test_a_thread_left_running_is_dead_when_run_returns(sandbox: Sandbox, tmp_path: Path) -> None:
    """The end is reported early (before the kernel freed the process) only once every thread
    is exiting: a thread writing in a loop has stopped for good when ``run`` returns."""
    beater = (
        "import threading, time\n"
        "def beat():\n    while True:\n"
        "        with open('beat', 'a') as f:\n            f.write('.')\n"
        "        time.sleep(0.001)\n"
        "threading.Thread(target=beat, daemon=True).start()\n"
        "time.sleep(0.05)\n"
    )
    for _ in range(3):  # every run on a fresh or reused zygote, early or not
        (result,) = _runs(sandbox, tmp_path, [beater])
        assert result.error is None, result
        size = (tmp_path / "beat").stat().st_size
        time.sleep(0.1)
        assert (tmp_path / "beat").stat().st_size == size


def _until_unread(fd: int, timeout_s: float = 10.0) -> None:
    """Wait until the pipe whose write end is ``fd`` has no reader left (``POLLERR``)."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(ev & select.POLLERR for _, ev in poller.poll(50)):
            return
    raise AssertionError("the dead child's pipe still has a reader")


def test_a_child_that_dies_as_its_program_is_sent_runs_it_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The waiting child dies between gg's check and the program's write (the race
    ``take_primed`` cannot close): nothing of the program ran, so it runs in a sandbox of
    its own, correctly, and the next program is warm again."""
    taken = zygote_module.Zygote.take_primed
    killed: list[int] = []

    def take_and_kill(self: zygote_module.Zygote) -> zygote_module.Primed:
        primed = taken(self)
        if not killed:  # the first program only
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            _until_unread(primed.fds[2])
            killed.append(self.proc.pid)
        return primed

    async def go() -> tuple[ProgramResult, ProgramResult, bool]:
        async with Sandbox() as sandbox:
            run = functools.partial(sandbox.run, language="python", workspace=tmp_path,
                                    tools=[], handler=_answer)  # fmt: skip
            first, second = await run("print(6 * 7)"), await run("print(7 * 6)")
            return first, second, sandbox.warm

    monkeypatch.setattr(zygote_module.Zygote, "take_primed", take_and_kill)
    first, second, warm = asyncio.run(go())
    assert killed and warm  # a lost child is no reason to stop forking
    assert (first.error, first.output.strip()) == (None, "42"), first
    assert (second.error, second.output.strip()) == (None, "42"), second


def test_a_closed_zygote_leaves_no_process_of_its_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing a zygote returns only once its program and that program's children are
    gone (they die after the zygote, with its pid namespace; SPEC M3)."""
    taken: list[zygote_module.Zygote] = []
    take = zygote_module.Zygote.take_primed

    def spy(self: zygote_module.Zygote) -> zygote_module.Primed:
        taken.append(self)
        return take(self)

    monkeypatch.setattr(zygote_module.Zygote, "take_primed", spy)
    program = "import os, time\nif os.fork() == 0:\n    time.sleep(60)\ntime.sleep(60)\n"

    async def go() -> tuple[list[str], list[str]]:
        async with Sandbox() as sandbox:
            run = sandbox.run(program, language="python", workspace=tmp_path, tools=[],
                              handler=_answer)  # fmt: skip
            task = asyncio.ensure_future(run)
            for _ in range(400):
                await asyncio.sleep(0.025)
                if len(running := leftover_processes(str(tmp_path))) >= 2:
                    break
            taken[-1].close()
            left = leftover_processes(str(tmp_path))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 30)
            return running, left

    running, left = asyncio.run(go())
    assert len(running) >= 2, running  # the program and its child ran in the workspace
    assert left == []


def test_a_child_whose_zygote_closes_before_its_report_is_read_still_ends(
    tmp_path: Path,
) -> None:
    """A zygote closed in the same step its child was made (before the child's reader ever
    ran): waiting for that child returns, with the program counted as killed."""

    async def go() -> int | None:
        async with Sandbox() as sandbox:
            sandbox.warm_up(tmp_path, language="python")
            pool, key = sandbox._pool, sandbox._key(tmp_path.resolve())
            deadline = time.monotonic() + 30
            while not pool._ready.get(key):
                assert time.monotonic() < deadline, "no warm zygote started"
                await asyncio.sleep(0.05)
            zygote = pool._ready[key][0]
            child = ZygoteChild(zygote)
            zygote.child = child
            zygote.close()  # no await between: the child's reader has not started
            await asyncio.wait_for(child.wait(), 10)
            return child.poll()

    assert asyncio.run(go()) == -9
