"""No sandboxed program or command can swap the guest code a later process runs.

Every sandboxed process starts from the run directory's ``boot.pyc`` (and a zygote from
its ``zygote.pyc`` and ``runner.pyc``): a program that could write one would run its own
code, before confinement, in the next process to boot there (adversarial review of the
compiled guest boot). Whatever the layer, cold or from a warm zygote, a Python program
and a shell command find every compiled file and directory that holds one read-only,
and the next program still runs gg's code.
"""

from __future__ import annotations

import json

from sandbox_support import Arena, Recorder

from gg.sandbox import Sandbox
from support import GUEST_CODE_PROBE

_SHELL = (
    'for d in /gg/run /gg/guest "$(dirname "$TMPDIR")"; do for f in "$d"/*.pyc; do '
    '[ -e "$f" ] && { echo seen; true >> "$f" && echo "wrote $f"; mv "$f" "$f.old" 2>/dev/null && '
    'echo "moved $f"; }; done; true > "$d/planted.pyc" 2>/dev/null && echo "planted $d"; '
    "done 2>/dev/null; echo done"
)


async def test_no_program_can_write_the_compiled_guest_code(sandbox: Sandbox, arena: Arena) -> None:
    for _ in range(3):  # a cold start, then from the warm zygote
        result = await sandbox.run(
            GUEST_CODE_PROBE, language="python", workspace=arena.workspace, tools=[],
            handler=Recorder(),
        )  # fmt: skip
        assert result.error is None, result
        report = json.loads(result.output.strip().splitlines()[-1][len("GUEST ") :])
        assert report["seen"], report  # it found the run's compiled code
        assert report["wrote"] == [], report
    shell = await sandbox.run_shell(_SHELL, workspace=arena.workspace, timeout_s=20)
    lines = shell.output.splitlines()
    assert set(lines[:-1]) == {"seen"} and lines[-1] == "done", shell  # found, none written
    after = await sandbox.run(
        "print(6 * 7)", language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert (after.output, after.error) == ("42\n", None)
