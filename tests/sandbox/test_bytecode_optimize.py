"""gg's compile of the guest is the sandbox's own, whatever flags gg itself runs under.

The sandbox's interpreter runs ``-I -S -B`` with no ``-O``: the code gg compiles for it
(gg.sandbox.bytecode) must keep every ``assert``, ``__debug__`` branch and docstring even
when gg runs under ``python -O``/``-OO`` or ``PYTHONOPTIMIZE`` (adversarial review).
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

from gg.sandbox.bytecode import COMPILED
from gg.sandbox.host import GUEST_DIR

_DUMP = """
import sys
from gg.sandbox.bytecode import compiled
sys.stdout.buffer.write(compiled(sys.argv[1], "/gg/guest")[16:])
"""


def test_an_optimized_gg_compiles_the_guest_unoptimized() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    for name in COMPILED:
        done = subprocess.run(
            [sys.executable, "-OO", "-c", _DUMP, name], env=env, capture_output=True, check=True
        )
        code = marshal.loads(done.stdout)
        source = (GUEST_DIR / name).read_text()
        expected = compile(source, f"/gg/guest/{name}", "exec", dont_inherit=True, optimize=0)
        assert code.co_consts == expected.co_consts, name  # the module docstring kept
        assert code == expected, name  # the same bytecode, asserts and all
