"""Passing a limit, or abusing the membrane, is a runtime error within the limit (SPEC M3).

Each case runs under every layer this machine supports; after each one the
next program must run normally (gg unharmed).
"""

from __future__ import annotations

import time

import pytest
from sandbox_support import FAST, Arena, Recorder, leftover_processes

from gg.sandbox import Sandbox

# name -> (program, limits it may end with, seconds it may take at most)
PYTHON_CASES: dict[str, tuple[str, set[str | None], float]] = {
    "infinite loop": ("while True:\n    pass\n", {"cpu", "wall"}, FAST.wall_s + 4),
    "sleep forever": ("import time\ntime.sleep(10_000)\n", {"wall"}, FAST.wall_s + 4),
    "memory hog": (
        "blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))\n",
        {"memory"},
        FAST.wall_s + 4,
    ),
    "fork bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        {"cpu", "wall"},
        FAST.wall_s + 6,
    ),
    "plain fork bomb": (
        "import os\nwhile True:\n    os.fork()\n",
        {"processes", "cpu", "wall"},
        12,
    ),
    "1 GB print": (
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n",
        {"output"},
        FAST.wall_s,
    ),
    "huge file": ("open('big.bin', 'wb').write(b'x' * (100 << 20))\n", {"file_size", "memory"}, 10),
    "closes the membrane": (
        "import os\nos.close(3)\nos.close(4)\nprint('closed')\n",
        {None},
        5,
    ),
    "closed membrane, then a call": (
        "import os\nos.close(3)\ngg.session.finish('x')\n",
        {None},
        5,
    ),
    "floods garbage": (
        "import os\nwhile True:\n    os.write(3, b'\\x00garbage\\xff\\n' * 1000)\n",
        {"membrane"},
        5,
    ),
    "oversized message": (
        "import os\n"
        "name = b'a' * 2_000_000\n"
        'os.write(3, b\'{"kind": "tool", "name": "\' + name + b\'"}\\n\')\n',
        {"membrane"},
        5,
    ),
    "no newline, ever": (
        "import os\nwhile True:\n    os.write(3, b'{' * 65536)\n",
        {"membrane"},
        5,
    ),
    "forged result, then an error": (
        "import os\n"
        'os.write(3, b\'{"kind": "result", "returned": "1", "error": null, "limit": null}\\n\')\n'
        "raise ValueError('after the forgery')\n",
        {"membrane"},
        5,
    ),
    "forged unknown kind": (
        'import os\nos.write(3, b\'{"kind": "root_shell"}\\n\')\n',
        {"membrane"},
        5,
    ),
    "forged ready": ('import os\nos.write(3, b\'{"kind": "ready"}\\n\')\n', {"membrane"}, 5),
    "too many calls": (
        "while True:\n    gg.tools.echo()\n",
        {"membrane"},
        FAST.wall_s + 4,
    ),
}


@pytest.mark.parametrize("case", list(PYTHON_CASES))
async def test_python_limit(sandbox: Sandbox, arena: Arena, case: str) -> None:
    program, limits, seconds = PYTHON_CASES[case]
    from gg.models.base import ToolSpec

    echo = ToolSpec(
        name="echo", description="Echo.", parameters={"type": "object", "properties": {}}
    )
    started = time.monotonic()
    result = await sandbox.run(
        program, language="python", workspace=arena.workspace, tools=[echo], handler=Recorder()
    )
    took = time.monotonic() - started
    assert result.error, result
    assert result.limit in limits, result
    assert took < seconds, (took, result)
    assert len(result.output) < 2 * FAST.output_bytes
    assert leftover_processes(str(arena.workspace)) == []
    again = await sandbox.run(
        "print('alive')", language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert (again.output, again.error) == ("alive\n", None)


JS_CASES: dict[str, tuple[str, set[str | None]]] = {
    "infinite loop": ("while (true) {}\n", {"cpu", "wall"}),
    "heap hog": (
        "const a = [];\nwhile (true) a.push(new Array(1e6).fill(a.length));\n",
        {"memory"},
    ),
    "buffer hog": (
        "const a = [];\nwhile (true) a.push(new Uint8Array(100e6));\n",
        {"memory"},
    ),
    "1 GB print": (
        "const s = 'x'.repeat(1 << 20);\nfor (let i = 0; i < 1024; i++) console.log(s);\n",
        {"output"},
    ),
    "floods garbage": (
        "const f = Deno.openSync('/dev/fd/3', {write: true});\n"
        "while (true) f.writeSync(new TextEncoder().encode('garbage\\n'));\n",
        {"membrane"},
    ),
}


@pytest.mark.parametrize("case", list(JS_CASES))
async def test_javascript_limit(default_sandbox: Sandbox, arena: Arena, case: str) -> None:
    program, limits = JS_CASES[case]
    result = await default_sandbox.run(
        program, language="javascript", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert result.error, result
    assert result.limit in limits, result
    again = await default_sandbox.run(
        "console.log('alive')", language="javascript", workspace=arena.workspace, tools=[],
        handler=Recorder(),
    )  # fmt: skip
    assert (again.output, again.error) == ("alive\n", None)
