"""The guest's Python code, compiled once per gg process (issue 11: start-up at the wrong time).

Every sandboxed process starts as ``boot.py`` (24 KB of source), and a warm zygote loads
``zygote.py`` and ``runner.py`` too. Run as a script, a file is compiled at every start:
about 4.4 ms of CPU for ``boot.py`` alone, paid by every JavaScript spare, shell command
and cold program, and 8.7 ms more by every zygote. gg compiles them once per process
instead, and writes the code into each run's directory (``boot.pyc``, ``zygote.pyc``,
``runner.pyc``: the standard 16-byte header, then :mod:`marshal` data), which the guest
loads in about 0.1 ms.

The guest uses a file only when its header carries the magic number of the interpreter
that runs it (``_frozen_importlib_external.MAGIC_NUMBER``, loaded at every start). gg
compiles with its own interpreter; when the sandbox's is another version, the header
does not match and the guest compiles the source as before, so a mismatch costs the old
time and nothing else (:data:`BOOT_STUB`).

Trust: the code is made in gg's memory from the installed guest sources and written into
the run's own directory, created by gg for that run; nothing is read back from a cache a
program could have written.
"""

from __future__ import annotations

import functools
import importlib.util
import marshal
from pathlib import Path

from gg.sandbox.host import GUEST_DIR

__all__ = ["BOOT_STUB", "COMPILED", "compiled", "needed", "write_compiled"]

COMPILED = ("boot.py", "zygote.py", "runner.py")
"""The guest files written compiled into each run's directory (as ``NAME.pyc``)."""

BOOT_STUB = (
    "import marshal, _frozen_importlib_external as _gg_i\n"
    "def _gg_code(pyc, source):\n"
    "    try:\n"
    "        with open(pyc, 'rb') as f:\n"
    "            data = f.read()\n"
    "    except OSError:\n"
    "        data = b''\n"
    "    if data[:4] == _gg_i.MAGIC_NUMBER:\n"
    "        return marshal.loads(data[16:])\n"
    "    with open(source, 'rb') as f:\n"
    "        return compile(f.read(), source, 'exec')\n"
    "exec(_gg_code({pyc!r}, {source!r}))\n"
)
"""The ``python -c`` program that starts ``boot.py``: its compiled code when the header's
magic number is this interpreter's, else its source. It runs in ``__main__``'s namespace,
as the script itself would (``boot.py`` hands its own module to the zygote)."""


@functools.cache
def compiled(name: str, guest_dir: str) -> bytes:
    """The ``.pyc`` bytes of guest file ``name``, as seen at ``guest_dir`` in the sandbox.

    Args:
        name: one of :data:`COMPILED`.
        guest_dir: the guest directory's path inside the sandbox (its tracebacks' paths).

    Returns:
        The 16-byte header (this interpreter's magic number, no source stamp) and the
        marshalled code object, compiled unoptimized (asserts and docstrings kept, as the
        sandbox's own ``-I -S -B`` compile of the source keeps them).

    Raises:
        OSError: the installed source cannot be read.
        SyntaxError: it does not compile (a broken install).
    """
    source = (GUEST_DIR / name).read_bytes()
    # optimize=0: the sandbox's interpreter runs without -O, whatever flags gg runs under
    code = compile(source, f"{guest_dir}/{name}", "exec", dont_inherit=True, optimize=0)
    return importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)


def needed(mode: str) -> tuple[str, ...]:
    """The :data:`COMPILED` files a process of ``mode`` loads (a ``launch.Mode``).

    Every process boots (``boot.py``); a Python program loads the runner too, and a zygote
    both the runner and its server. The others (JavaScript, shell, check, probe) load
    nothing more.
    """
    if mode == "zygote":
        return COMPILED
    return ("boot.py", "runner.py") if mode == "python" else ("boot.py",)


def write_compiled(run_dir: Path, guest_dir: str, names: tuple[str, ...] = COMPILED) -> None:
    """Write the code of the guest files ``names`` into ``run_dir`` (``NAME.pyc``, 0644).

    Raises:
        OSError: a file cannot be written.
    """
    for name in names:
        (run_dir / f"{name}c").write_bytes(compiled(name, guest_dir))
