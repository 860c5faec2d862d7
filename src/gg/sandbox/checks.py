"""Checks of a program's text before it runs, none of which can take gg down (issue 9, item 6).

- :func:`text_problem`, in gg: the program is at most ``Limits.program_bytes``
  UTF-8 bytes and valid Unicode (no lone surrogate). Linear, no parsing.
- :func:`python_problem`: Python's compiler, in a child process of the
  sandbox's interpreter (``runner.py --check``) under ``RLIMIT_AS`` and
  ``RLIMIT_CPU`` and a wall clock, with an empty environment. Compiling runs
  no program code, so the child needs no other isolation; deep nesting, huge
  literals or a compiler that wants gigabytes end the child, not gg.
  (A run compiles the program again inside the sandbox: see ``runner.py``.)
- :func:`js_problem`: Deno's parser output (run in the sandbox by ``core``)
  turned into a :class:`CompileProblem`.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from gg import bounded
from gg.errors import SandboxError
from gg.sandbox.host import GUEST_DIR, host_facts
from gg.sandbox.limits import Limits

__all__ = ["CHECK_TIMEOUT_S", "CompileProblem", "js_problem", "python_problem", "text_problem"]

CHECK_TIMEOUT_S = 20
"""Wall-clock seconds a syntax check may take (Python or JavaScript)."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_JS_WHERE = re.compile(r"program\.mjs:(\d+):(\d+)")
_CHECK_OUTPUT_BYTES = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileProblem:
    """Why a program does not compile: the compiler's own message and where (1-based).

    ``refused`` is true when gg refused the text before any compiler saw it (too
    large, not valid Unicode): the turn is still a ``compile_error`` (SPEC S5, §10).
    """

    message: str
    line: int | None
    column: int | None
    refused: bool = False


def text_problem(program: str, limits: Limits) -> CompileProblem | None:
    """Whether ``program`` is too large or not valid Unicode (no compiler involved).

    Args:
        program: the program's source.
        limits: ``program_bytes`` is the bound.

    Returns:
        ``None`` when it may be compiled, else the (``refused``) :class:`CompileProblem`.
    """
    cap = limits.program_bytes
    size = len(program) if len(program) > cap else len(program.encode("utf-8", "surrogatepass"))
    if size > cap:
        return CompileProblem(
            message=(
                f"the program is {size:,} bytes, over gg's limit of {cap:,} bytes "
                "([sandbox] program_bytes): submit a smaller program (data can be written "
                "to files by several smaller programs)"
            ),
            line=None, column=None, refused=True,
        )  # fmt: skip
    hit = _SURROGATE.search(program)
    if hit is None:
        return None
    at = hit.start()
    line, column = program.count("\n", 0, at) + 1, at - program.rfind("\n", 0, at)
    return CompileProblem(
        message=(
            f"the program's text is not valid Unicode: a lone surrogate \\u{ord(hit[0]):04x} "
            f"at line {line}, column {column} (write such a character as an escape, "
            "for example '\\ud800', not as the character itself)"
        ),
        line=line, column=column, refused=True,
    )  # fmt: skip


def python_problem(program: str, limits: Limits) -> CompileProblem | None:
    """Compile ``program`` with the sandbox's Python in a bounded child process.

    Args:
        program: the source; :func:`text_problem` must have passed.
        limits: ``memory_mb`` and ``cpu_s`` bound the child.

    Returns:
        ``None`` if it compiles, else the :class:`CompileProblem` (also when the
        compiler passed a limit: that program cannot be compiled here either).

    Raises:
        gg.errors.SandboxError: the sandbox's interpreter could not be started.
    """
    argv = [host_facts().python, "-I", "-S", "-B", str(GUEST_DIR / "runner.py"), "--check",
            str(limits.memory_mb), str(max(1, int(limits.cpu_s + 0.999)))]  # fmt: skip
    try:
        done = subprocess.run(
            argv, input=program.encode("utf-8"), capture_output=True, env={}, cwd="/",
            timeout=CHECK_TIMEOUT_S, check=False, start_new_session=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return _unbounded(f"it took Python's compiler more than {CHECK_TIMEOUT_S} s")
    except OSError as exc:
        raise SandboxError(f"the Python syntax check could not start: {exc}") from exc
    if done.returncode == 0 and done.stdout.strip() == b"ok":
        return None
    try:
        report = bounded.loads(done.stdout[:_CHECK_OUTPUT_BYTES].decode("utf-8", "replace"))
        message, line, column = report["message"], report["line"], report["column"]
    except (ValueError, TypeError, KeyError):
        tail = done.stderr[-300:].decode("utf-8", "replace").strip()
        return _unbounded(f"Python's compiler stopped (exit status {done.returncode}) {tail}")
    where = [v if isinstance(v, int) and not isinstance(v, bool) else None for v in (line, column)]
    return CompileProblem(message=bounded.scrub(str(message))[:8000], line=where[0],
                          column=where[1])  # fmt: skip


def _unbounded(why: str) -> CompileProblem:
    return CompileProblem(
        message=(
            f"the program could not be compiled within the sandbox's limits: {why.strip()} "
            "(it is too large or too deeply nested)"
        ),
        line=None, column=None,
    )  # fmt: skip


def js_problem(output: str) -> CompileProblem:
    """Deno's parse error output as a :class:`CompileProblem` (paths shown as ``program.js``)."""
    text = re.sub(r"file://\S*?/program\.mjs", "program.js", bounded.scrub(output).strip())
    if "overflowed its stack" in text or "Maximum call stack" in text:
        text = f"Deno's parser ran out of stack: the program is nested too deeply ({text[:300]})"
    text = re.sub(r"^error: ", "", text)
    where = _JS_WHERE.search(output)
    line, column = (int(where[1]), int(where[2])) if where else (None, None)
    return CompileProblem(message=text[:4000], line=line, column=column)
