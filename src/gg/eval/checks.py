"""Success checks: the helpers ``check.py`` scripts use, and running one (SPEC M6).

A task's ``check.py`` is trusted (it ships in the repo); the workspace it judges is
not (the agent wrote it). So a check never imports or runs workspace code on the
host: tests and snippets run in gg's sandbox with the workspace read-only, files are
read beneath the workspace with a size cap, and the model's word (its summary) only
counts where the task is to answer a question. The outcome reaches ``check.py`` as
one JSON object on stdin::

    {"workspace": "/tmp/...", "original": "evals/<task>/workspace",
     "ending": null | {"call": "finish", "summary": "..."} | {"call": "approve"}
               | {"call": "request_changes", "items": ["..."]}}

A check prints one line and exits 0 (success) or 1 (failure, the line says why).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import gg
from gg.errors import GGError
from gg.sandbox import Sandbox
from gg.tools.safefs import read_beneath

__all__ = ["Check", "CheckOutcome", "run_check", "tree_digest"]

_CAP = 1_000_000
_MAX_ENTRIES = 10_000
_IGNORED = {"__pycache__", ".pytest_cache"}


def tree_digest(root: Path) -> dict[str, str]:
    """``{relative path: digest}`` of a tree, links not followed, caches ignored.

    Regular files map to their sha256, links to ``link:<target>``, directories to
    ``dir``, anything else to its kind. At most 10,000 entries are looked at.
    """
    out: dict[str, str] = {}
    for top, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED)
        for name in [*dirs, *sorted(files)]:
            if len(out) >= _MAX_ENTRIES:
                return out
            path = Path(top, name)
            out[path.relative_to(root).as_posix()] = _entry_digest(path)
    return out


def _entry_digest(path: Path) -> str:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return f"link:{os.readlink(path)}"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    if path.suffix == ".pyc":
        return "pyc"
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOutcome:
    """What a check said.

    Attributes:
        ok: the task succeeded.
        message: the check's one line (why it failed, or what it verified).
    """

    ok: bool
    message: str


def run_check(
    check: Path, *, workspace: Path, original: Path, ending: dict[str, Any] | None
) -> CheckOutcome:
    """Run ``check`` (a task's ``check.py``) on a finished run's workspace.

    Args:
        check: the script; it runs with this interpreter, from its own directory.
        workspace: the run's workspace (as the agent left it).
        original: the task's pristine workspace.
        ending: the ending as ``{"call", ...arguments}``, ``None`` when the session stopped.

    Returns:
        The outcome; a crash or a timeout (300 s) of the check is a failure saying so.
    """
    payload = {"workspace": str(workspace), "original": str(original), "ending": ending}
    try:
        done = subprocess.run(
            [sys.executable, str(check)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=300,
            cwd=check.parent,
            env=_check_env(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return CheckOutcome(ok=False, message="the check timed out after 300 s")
    lines = (done.stdout.strip() or done.stderr.strip() or "(no output)").splitlines()
    message = lines[-1][:300] if done.returncode in (0, 1) else f"check crashed: {lines[-1][:300]}"
    return CheckOutcome(ok=done.returncode == 0, message=message)


def _check_env() -> dict[str, str]:
    """This process's environment, with this gg first on the path (the check imports it)."""
    ours = str(Path(gg.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ours, path) if p)}


class Check:
    """The success check of one run, for ``check.py`` scripts.

    Each method verifies one thing and, when it does not hold, prints ``fail: <why>``
    and exits 1; :meth:`done` prints ``ok`` and exits 0.

    Args:
        workspace: the run's workspace.
        original: the task's pristine workspace.
        ending: the ending (``{"call", ...}``) or ``None``.
    """

    def __init__(self, *, workspace: Path, original: Path, ending: dict[str, Any] | None) -> None:
        self.workspace = workspace
        self.original = original
        self.ending = ending
        self._verified: list[str] = []

    @classmethod
    def from_stdin(cls) -> Check:
        """The check of the outcome JSON on stdin (see the module docstring)."""
        data = json.loads(sys.stdin.read(_CAP))
        return cls(
            workspace=Path(data["workspace"]),
            original=Path(data["original"]),
            ending=data.get("ending"),
        )

    def fail(self, why: str) -> NoReturn:
        """Print ``fail: why`` and exit 1."""
        print(f"fail: {' '.join(why.split())[:300]}")
        sys.exit(1)

    def done(self) -> NoReturn:
        """Every check held: print ``ok: ...`` and exit 0."""
        print(f"ok: {', '.join(self._verified) or 'nothing to check'}")
        sys.exit(0)

    def ended_with(self, call: str) -> None:
        """The session ended by ``call`` (``finish``, ``approve``, ``request_changes``)."""
        got = None if self.ending is None else self.ending.get("call")
        if got != call:
            self.fail(
                f"expected the session to end with {call}, it ended with {got or 'no ending'}"
            )
        self._verified.append(f"ended with {call}")

    def read(self, path: str) -> str:
        """``path``'s text beneath the workspace (at most 1 MB); a failure when unreadable."""
        try:
            return read_beneath(self.workspace, path, cap=_CAP).decode("utf-8", "replace")
        except (GGError, OSError) as e:
            self.fail(f"cannot read {path}: {e}")

    def unchanged(self, *paths: str) -> None:
        """``paths`` (default: the whole workspace) are as in the original workspace."""
        before, after = tree_digest(self.original), tree_digest(self.workspace)
        names = paths or tuple(sorted(before.keys() | after.keys()))
        changed = [p for p in names if before.get(p) != after.get(p)]
        if changed:
            self.fail(f"changed: {', '.join(changed[:5])} (it should have stayed as it was)")
        self._verified.append(f"unchanged: {', '.join(paths) or 'all files'}")

    def contains(self, path: str, text: str) -> None:
        """``path`` holds ``text``."""
        if text not in self.read(path):
            self.fail(f"{path} does not contain {text!r}")
        self._verified.append(f"{path} has {text!r}")

    def lacks(self, path: str, text: str) -> None:
        """``path`` does not hold ``text``."""
        if text in self.read(path):
            self.fail(f"{path} still contains {text!r}")
        self._verified.append(f"{path} lacks {text!r}")

    def file_is(self, path: str, text: str) -> None:
        """``path`` holds exactly ``text`` (surrounding white space aside)."""
        got = self.read(path).strip()
        if got != text:
            self.fail(f"{path} holds {got[:60]!r}, expected {text!r}")
        self._verified.append(f"{path} is {text!r}")

    def _summary(self) -> str:
        return str((self.ending or {}).get("summary", ""))

    def summary_has(self, text: str, *, not_: tuple[str, ...] = ()) -> None:
        """The finish summary names ``text`` (case-insensitive) and none of ``not_``."""
        summary = self._summary().casefold()
        if text.casefold() not in summary:
            self.fail(f"the summary does not give the answer ({self._summary()[:80]!r})")
        wrong = [w for w in not_ if w.casefold() in summary]
        if wrong:
            self.fail(f"the summary also names {wrong[0]!r}, a wrong answer")
        self._verified.append(f"answer {text!r}")

    def summary_has_number(self, number: int, *, not_: tuple[int, ...] = ()) -> None:
        """The finish summary holds ``number`` as a whole number, and none of ``not_``."""
        found = {int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.]\d)", self._summary())}
        if number not in found:
            self.fail(f"the summary does not give {number} ({self._summary()[:80]!r})")
        if found & set(not_):
            self.fail(f"the summary also gives {sorted(found & set(not_))[0]}, a wrong answer")
        self._verified.append(f"answer {number}")

    def tests_pass(self, command: str = "python3 -m unittest -q", timeout_s: float = 120) -> None:
        """``command`` exits 0 in the workspace, run in gg's sandbox (workspace read-only)."""
        code, output = self._sandboxed(command, timeout_s=timeout_s)
        if code != 0:
            self.fail(f"{command!r} exited {code}: {output.strip()[-200:]}")
        self._verified.append(f"{command!r} passes")

    def python_holds(self, source: str, timeout_s: float = 60) -> None:
        """The Python ``source`` runs without error in the workspace, in gg's sandbox.

        The snippet is the check's own (hidden from the agent): asserts over the
        workspace's code on inputs the task did not show.
        """
        code, output = self._sandboxed("python3 -", timeout_s=timeout_s, stdin=source)
        if code != 0:
            self.fail(f"hidden check failed: {output.strip()[-200:]}")
        self._verified.append("hidden check holds")

    def _sandboxed(
        self, command: str, *, timeout_s: float, stdin: str | None = None
    ) -> tuple[int, str]:
        async def go() -> tuple[int, str]:
            async with Sandbox() as sandbox:
                result = await sandbox.run_shell(
                    command,
                    workspace=self.workspace,
                    timeout_s=timeout_s,
                    read_only=True,
                    stdin=None if stdin is None else stdin.encode(),
                )
            code = 124 if result.exit_code is None else result.exit_code  # None: timed out
            return code, result.output + (result.stderr or "")

        try:
            return asyncio.run(go())
        except GGError as e:
            self.fail(f"the sandbox could not run {command!r}: {e}")
