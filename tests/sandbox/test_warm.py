"""The warm sandbox (issue 11): programs of one sandbox share a zygote, never state."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gg.sandbox import CallAnswer, CallRequest, ProgramResult, Sandbox


async def _answer(request: CallRequest) -> CallAnswer:
    return CallAnswer(ok=True, value=None)


def _runs(workspace: Path, programs: list[str]) -> list[ProgramResult]:
    async def go() -> list[ProgramResult]:
        async with Sandbox() as sandbox:
            return [
                await sandbox.run(p, language="python", workspace=workspace, tools=[],
                                  handler=_answer)
                for p in programs
            ]  # fmt: skip

    return asyncio.run(go())


def test_no_state_leaks_between_programs(tmp_path: Path) -> None:
    first = (
        "import os, builtins, subprocess, sys\nbuiltins.LEAK = 1\nGLOBAL = 2\n"
        "fd = os.open('/dev/null', os.O_RDONLY)\nos.dup2(fd, 77)\n"
        "p = subprocess.Popen(['sleep', '30'])\nopen('/tmp/left', 'w').write('x')\n"
        "sys.modules['leaky'] = 1\nprint('pid', os.getpid())"
    )
    second = (
        "import os, builtins, sys\n"
        "print(hasattr(builtins, 'LEAK'), 'GLOBAL' in globals(), 'leaky' in sys.modules)\n"
        "print(sorted(int(f) for f in os.listdir('/proc/self/fd')))\n"
        "print(os.path.exists('/tmp/left'))\n"
        "print([open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') if p.isdigit()])"
    )
    one, two = _runs(tmp_path, [first, second])
    assert one.error is None, one
    assert two.error is None, two
    lines = two.output.splitlines()
    assert lines[0] == "False False False", two.output
    assert "77" not in lines[1], two.output
    assert lines[2] == "False", two.output
    assert "sleep" not in lines[3], two.output


def test_a_program_that_kills_its_zygote_gets_an_error_and_the_next_runs(tmp_path: Path) -> None:
    killers = [
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "x = bytearray(1 << 34)",
    ]
    for killer in killers:
        bad, good = _runs(tmp_path, [killer, "print(6 * 7)"])
        assert bad.error is not None, (killer, bad)
        assert good.error is None and good.output.strip() == "42", (killer, good)
