"""The model of the Ray board tests (importable on every Ray worker: module-level functions).

Five issues: #1 and #2 append a line each to ``shared.py`` (they conflict when both
branch from the same base; the merge agent then writes the union, in number order),
#3's reviewer requests changes once, #4 and #5 write a file each. The first reply
of every implementer waits ``GG_TEST_PAUSE_S`` seconds so that workers overlap.

Kill points: ``GG_TEST_CRASH=POINT:N:WHO[:K][,...]`` with ``GG_TEST_CRASH_DIR=DIR``
makes :func:`probe` SIGKILL at the ``K``-th time (default 1) issue ``N`` (0: the
driver's points) reaches ``POINT``, each point once per test (a marker in DIR): one of
:data:`gg.board.raydispatch.POINTS`, or the model's own ``implementing``, ``reviewing``
and ``merging`` (a session's first reply). ``WHO``: ``worker`` kills the process that
got there (a Ray worker; Ray retries its task), ``all`` the driver's process group
with it (the driver, its local Ray cluster, every worker).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path
from typing import Any

from board_support import job_of

import gg
from gg.testing import call

SHARED = "X = 0\n"
LINES = {1: "A = 1\n", 2: "B = 2\n"}
RESOLVED = SHARED + LINES[1] + LINES[2]
TITLES = [
    "Add A to shared",
    "Add B to shared",
    "Write issue_3.py",
    "Write issue_4.py",
    "Write issue_5.py",
]


def _since_request(messages: list[Any]) -> tuple[bool, list[Any]]:
    asked = [
        i for i, m in enumerate(messages) if m.role == "user" and "requested changes" in m.content
    ]
    return bool(asked), messages[asked[-1] :] if asked else messages


def implementer(n: int, messages: list[Any]) -> gg.Reply:
    asked, since = _since_request(messages)
    k = sum(1 for m in since if m.role == "assistant")
    if n in LINES:
        if k == 0:
            return call("read_file", path="shared.py")
        if k == 1:
            text = next(m.content for m in reversed(since) if m.role == "tool")
            return call("write_file", path="shared.py", content=text + LINES[n])
        return call("finish", summary=f"Appended {LINES[n].strip()}.")
    content = f'"""Issue {n}."""\nN = {n}\n' if asked else f"N = {n}\n"
    if k == 0:
        return call("write_file", path=f"issue_{n}.py", content=content)
    return call("finish", summary=f"Wrote issue_{n}.py.")


async def _hang_once(n: int) -> None:
    """``GG_TEST_HANG=DIR``: the first implementer of #4 writes its pid to DIR/pid and hangs."""
    folder = os.environ.get("GG_TEST_HANG", "")
    if n != 4 or not folder or os.path.exists(os.path.join(folder, "pid")):
        return
    with open(os.path.join(folder, "pid.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(folder, "pid.tmp"), os.path.join(folder, "pid"))
    await asyncio.sleep(600)  # until the test SIGKILLs this worker


def probe(point: str, n: int) -> None:
    """The kill points of ``GG_TEST_CRASH`` (see the module's description)."""
    spec, folder = os.environ.get("GG_TEST_CRASH", ""), os.environ.get("GG_TEST_CRASH_DIR", "")
    for i, one in enumerate(spec.split(",") if spec and folder else []):
        want, number, who, *k = one.split(":")
        marker = os.path.join(folder, f"killed-{i}")
        if want != point or int(number) != n or os.path.exists(marker):
            continue
        count = os.path.join(folder, f"{point}-{n}.count")
        seen = int(Path(count).read_text()) + 1 if os.path.exists(count) else 1
        Path(count).write_text(str(seen))
        if seen != int(k[0] if k else 1):
            continue
        Path(marker).write_text(f"{point}:{n}:{who} pid {os.getpid()}\n")
        if who == "all":
            os.killpg(os.getpgid(int(os.environ["GG_TEST_DRIVER_PID"])), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
    job, n = job_of(messages)
    first = sum(1 for m in messages if m.role == "assistant") == 0
    if first:
        probe({"implement": "implementing", "review": "reviewing"}.get(job, "merging"), n)
    if job == "implement":
        if first:
            await asyncio.sleep(float(os.environ.get("GG_TEST_PAUSE_S", "0.5")))
            await _hang_once(n)
        return implementer(n, messages)
    if job == "review":
        found = re.search(r"round (\d+)\)", messages[1].content)
        if n == 3 and found and found[1] == "1":
            return call("request_changes", items=["Give issue_3.py a docstring"])
        return call("approve")
    conflicted = "has conflicts in these files" in messages[1].content
    if conflicted and sum(1 for m in messages if m.role == "assistant") == 0:
        return call("write_file", path="shared.py", content=RESOLVED)
    return call("finish", summary="Merged.")
