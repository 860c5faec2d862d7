"""The built-in file tools against a hostile workspace (issue 9, Build item 1; Must show).

Real files, real attacker processes and threads, the real registry tools:

- an attacker process swaps a real directory with a symlink to an outside
  directory holding a canary (``renameat2(RENAME_EXCHANGE)`` in a loop), and
  a real file with a symlink to the canary, while each file tool runs
  thousands of times: the canary is never read, listed or found, and
  nothing is ever written outside; the old check-then-open is shown to lose
  the same race, so the harness is live;
- FIFOs, sockets, device nodes, ``/dev/zero`` (symlinked and via ``..``) and
  huge files are tool errors within a short deadline while a heartbeat on the
  event loop keeps ticking, and the next call works;
- catastrophic-backtracking patterns finish within the deadline (RE2), and
  patterns RE2 cannot run are clear tool errors;
- end to end, a code-mode program in the real sandbox races a thread of its
  own against ``gg.tools.read_file`` and never sees the canary.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.errors import ToolError
from gg.testing import ScriptedModel
from gg.tools import Tool, ToolContext, default_registry, safefs
from gg.tools.search import Search

ITERATIONS = 2_000  # per tool and race shape

SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
print("ready", flush=True)
while True:
    libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
"""


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A workspace with ``d/`` (real) and ``s`` (symlink to ``out/``), ``f`` and ``l`` (to the
    canary); ``out/`` holds the canary and an outside-only name."""
    secret = f"CANARY-{secrets.token_hex(8)}"
    out = tmp_path / "out"
    out.mkdir()
    (out / "canary.txt").write_text(secret)
    (out / "outside-only").mkdir()
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d/canary.txt").write_text("inside")
    (ws / "s").symlink_to(out)
    (ws / "f").write_text("inside")
    (ws / "l").symlink_to(out / "canary.txt")
    before = sorted(p.name for p in out.rglob("*"))
    yield {"ws": ws, "out": out, "secret": secret, "ctx": ToolContext(workspace=ws)}
    assert (out / "canary.txt").read_text() == secret, "the canary was written through"
    assert sorted(p.name for p in out.rglob("*")) == before, "something was written outside"


@contextlib.contextmanager
def swapping(a: Path, b: Path) -> Iterator[None]:
    """An attacker process exchanging ``a`` and ``b`` as fast as it can."""
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(a), str(b)], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    try:
        yield
    finally:
        proc.kill()
        proc.wait()
        if a.is_symlink():  # leave the names as they were
            os.rename(a, a.with_name("tmp-swap"))
            os.rename(b, a)
            os.rename(a.with_name("tmp-swap"), b)


@pytest.fixture(params=["openat2", "walk"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with the kernel's ``openat2``, and again with gg's own O_NOFOLLOW walk
    (what a kernel without ``openat2`` gets)."""
    if request.param == "walk":
        monkeypatch.setattr(safefs, "_OPENAT2", None)
    elif safefs._OPENAT2 is None:
        pytest.skip("this kernel has no openat2")
    return str(request.param)


def builtin(name: str) -> Tool:
    t = default_registry().get(name)
    assert t is not None
    return t


async def call(name: str, ctx: ToolContext, **arguments: Any) -> str:
    t = builtin(name)
    return await t.call(t.validate(arguments), ctx)


async def outcomes(name: str, ctx: ToolContext, n: int, **arguments: Any) -> tuple[list[str], int]:
    """Results of ``n`` calls, and how many were tool errors."""
    texts, errors = [], 0
    for _ in range(n):
        try:
            texts.append(await call(name, ctx, **arguments))
        except ToolError as exc:
            errors += 1
            texts.append(str(exc))
    return texts, errors


# ---------------------------------------------------------------- races


def test_the_race_harness_beats_a_check_then_open(arena: dict[str, Any]) -> None:
    """The old way (resolve, check, then open by path) loses this race: the harness is live."""
    ws, secret = arena["ws"], arena["secret"]
    won = False
    with swapping(ws / "d", ws / "s"):
        deadline = time.monotonic() + 20
        while not won and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if (ws / "d/canary.txt").resolve().is_relative_to(ws):  # the check...
                    won = secret in (ws / "d/canary.txt").read_text()  # ...then the use
    assert won, "the attacker never won against check-then-open: the race test proves nothing"


async def test_read_file_never_reads_the_canary_through_a_swapped_dir(
    arena: dict[str, Any], engine: str
) -> None:
    ws, secret, ctx = arena["ws"], arena["secret"], arena["ctx"]
    with swapping(ws / "d", ws / "s"):
        texts, errors = await outcomes("read_file", ctx, ITERATIONS, path="d/canary.txt")
    assert not any(secret in t for t in texts)
    assert texts.count("inside") > 0 and errors > 0  # both sides of the race were seen


async def test_read_file_never_follows_a_swapped_final_symlink(
    arena: dict[str, Any], engine: str
) -> None:
    ws, secret, ctx = arena["ws"], arena["secret"], arena["ctx"]
    with swapping(ws / "f", ws / "l"):
        texts, _ = await outcomes("read_file", ctx, ITERATIONS, path="f")
        texts += (await outcomes("read_file", ctx, ITERATIONS // 4, path="l"))[0]
    assert not any(secret in t for t in texts) and "inside" in texts


async def test_list_dir_never_lists_outside(arena: dict[str, Any], engine: str) -> None:
    ws, ctx = arena["ws"], arena["ctx"]
    with swapping(ws / "d", ws / "s"):
        texts, _ = await outcomes("list_dir", ctx, ITERATIONS, path="d")
        texts += (await outcomes("list_dir", ctx, ITERATIONS // 4, path="d/."))[0]
    assert not any("outside-only" in t for t in texts)
    assert "canary.txt" in texts


async def test_search_text_never_finds_the_canary(arena: dict[str, Any], engine: str) -> None:
    ws, secret, ctx = arena["ws"], arena["secret"], arena["ctx"]
    with swapping(ws / "d", ws / "s"):
        texts, _ = await outcomes("search_text", ctx, ITERATIONS // 2, pattern="CANARY|inside")
        texts += (
            await outcomes("search_text", ctx, ITERATIONS // 2, pattern="CANARY|inside", path="d")
        )[0]
    with swapping(ws / "f", ws / "l"):
        texts += (
            await outcomes("search_text", ctx, ITERATIONS // 2, pattern="CANARY|inside", path="f")
        )[0]
    assert not any(secret in t for t in texts)
    assert any("d/canary.txt:1: inside" in t for t in texts)


async def test_write_file_never_writes_outside(arena: dict[str, Any]) -> None:
    """Writes through a swapping parent (creating parents too) and over a swapping final
    symlink; the arena fixture checks nothing outside changed."""
    ws, ctx = arena["ws"], arena["ctx"]
    with swapping(ws / "d", ws / "s"):
        for i in range(ITERATIONS // 2):
            with contextlib.suppress(ToolError):
                await call("write_file", ctx, path=f"d/new{i % 7}/x{i % 5}.txt", content="w")
            with contextlib.suppress(ToolError):
                await call("write_file", ctx, path="d/canary.txt", content="overwritten")
    with swapping(ws / "f", ws / "l"):
        for _ in range(ITERATIONS // 2):
            with contextlib.suppress(ToolError):
                await call("write_file", ctx, path="f", content="overwritten")
    assert (ws / "d/canary.txt").read_text() == "overwritten"
    assert any((ws / "d").glob("new*/x*.txt"))


async def test_hard_links_are_not_read_and_not_written_through(arena: dict[str, Any]) -> None:
    ws, out, ctx, secret = arena["ws"], arena["out"], arena["ctx"], arena["secret"]
    hard = ws / "hard"
    try:
        os.link(out / "canary.txt", hard)
    except OSError:
        pytest.skip("no hard link across these directories")
    with pytest.raises(ToolError, match="hard link"):
        await call("read_file", ctx, path="hard")
    assert secret not in await call("search_text", ctx, pattern="CANARY")
    await call("write_file", ctx, path="hard", content="replaced")
    assert hard.read_text() == "replaced"  # a new file took the name; the canary is untouched


async def test_symlinks_inside_the_workspace_still_work(tmp_path: Path, engine: str) -> None:
    ws = tmp_path / "ws"
    (ws / "real/sub").mkdir(parents=True)
    (ws / "real/sub/a.txt").write_text("A")
    (ws / "rel").symlink_to("real/sub")
    (ws / "abs").symlink_to(ws / "real")
    (ws / "chain").symlink_to("rel/../sub/a.txt")
    (ws / "loop").symlink_to("loop")
    ctx = ToolContext(workspace=ws)
    assert await call("read_file", ctx, path="rel/a.txt") == "A"
    assert await call("read_file", ctx, path="abs/sub/a.txt") == "A"
    assert await call("read_file", ctx, path="chain") == "A"
    assert await call("list_dir", ctx, path="abs/sub") == "a.txt"
    assert await call("write_file", ctx, path="abs/new/b.txt", content="B") == (
        "wrote 1 characters to real/new/b.txt"
    )
    with pytest.raises(ToolError, match="too many symbolic links"):
        await call("read_file", ctx, path="loop")


# ---------------------------------------------------------------- special files


@contextlib.asynccontextmanager
async def heartbeat() -> Any:
    """Tick every 10 ms on the loop; yields a list whose last item is the longest gap (s)."""
    gaps = [0.0]

    async def beat() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps[0] = max(gaps[0], now - last)
            last = now

    task = asyncio.create_task(beat())
    try:
        yield gaps
    finally:
        task.cancel()


def specials(ws: Path) -> dict[str, str]:
    """Make hostile special files in ``ws``; return path -> the error expected."""
    os.mkfifo(ws / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "sock"))
    (ws / "zero").symlink_to("/dev/zero")
    (ws / "up").symlink_to("../../../../../../../../dev")
    with open(ws / "huge", "wb") as fh:
        fh.truncate(20 << 30)  # 20 GiB, sparse
    cases = {
        "fifo": "FIFO",
        "sock": "socket",
        "zero": "outside the workspace",
        "up/zero": "outside the workspace",
        "../../../../../../../dev/zero": "leaves",
        "huge": "too large",
        "/dev/zero": "absolute",
    }
    with contextlib.suppress(PermissionError):
        os.mknod(ws / "cdev", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero's numbers
        cases["cdev"] = "device|Permission|cannot"
    return cases


async def test_special_files_are_quick_tool_errors_and_gg_stays_responsive(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.txt").write_text("fine")
    ctx = ToolContext(workspace=ws)
    for path, why in specials(ws).items():
        for name, extra in (("read_file", {}), ("write_file", {"content": "x"})):
            if name == "write_file" and path in ("huge",):
                continue
            async with heartbeat() as gaps:
                start = time.monotonic()
                with pytest.raises(ToolError, match=why if name == "read_file" else None):
                    await asyncio.wait_for(call(name, ctx, path=path, **extra), 5)
                took = time.monotonic() - start
            assert took < 2 and gaps[0] < 0.5, (name, path, took, gaps)
            assert await call("read_file", ctx, path="ok.txt") == "fine"
    async with heartbeat() as gaps:
        assert await call("search_text", ctx, pattern="fine") == "ok.txt:1: fine"
        listing = await call("list_dir", ctx)
    assert gaps[0] < 0.5 and "fifo" in listing and "zero@" in listing
    assert (ws / "huge").stat().st_size == 20 << 30  # write_file refused, never truncated
    assert stat.S_ISFIFO(os.lstat(ws / "fifo").st_mode)


# ---------------------------------------------------------------- ReDoS

REDOS = [
    r"^(a+)+$",
    r"(a|aa)+$",
    r"^(a|a)*$",
    r"(x+x+)+y",
    r"^(\w+\s?)*$",
    r"(.*a){12}b",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(a*)*b",
    r"(?:a?){25}a{25}",
]


@pytest.mark.parametrize("pattern", REDOS)
async def test_catastrophic_patterns_finish_within_the_deadline(
    tmp_path: Path, pattern: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "evil.txt").write_text(("a" * 5_000 + "!\n") * 50 + "hello world " * 20 + "!\n")
    ctx = ToolContext(workspace=ws)
    async with heartbeat() as gaps:
        start = time.monotonic()
        try:
            text = await asyncio.wait_for(call("search_text", ctx, pattern=pattern), 12)
        except ToolError as exc:
            text = str(exc)
        took = time.monotonic() - start
    assert took < 3 and gaps[0] < 0.5, (took, gaps)
    assert "evil.txt" in text or "no match" in text
    assert (await call("search_text", ctx, pattern="hello")).startswith("evil.txt:51:")


@pytest.mark.parametrize(
    "pattern",
    [r"(a*)*\1b", r"(?=a)+a", r"(?<!x)(a+)+$", r"(?:x{65535}){65535}", r"((a{999}){999}){999}"],
)
async def test_patterns_re2_cannot_bound_are_tool_errors(tmp_path: Path, pattern: str) -> None:
    ctx = ToolContext(workspace=tmp_path)
    start = time.monotonic()
    with pytest.raises(ToolError, match="invalid regular expression|pattern"):
        await call("search_text", ctx, pattern=pattern)
    assert time.monotonic() - start < 2


def test_search_stops_at_its_deadline(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    with pytest.raises(ToolError, match="deadline"):
        Search(pattern="a", deadline=time.monotonic() - 1).run(tmp_path, ".")


# ---------------------------------------------------------------- end to end, code mode

PROGRAM = r"""
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
os.symlink({out!r}, "s")
os.makedirs("d", exist_ok=True)
open("d/canary.txt", "w").write("inside")
stop = False
def swap():
    while not stop:
        libc.renameat2(-100, b"d", -100, b"s", 2)
t = threading.Thread(target=swap)
t.start()
leaks = reads = 0
for i in range({n}):
    for call in (lambda: gg.tools.read_file(path="d/canary.txt"),
                 lambda: gg.tools.list_dir(path="d"),
                 lambda: gg.tools.search_text(pattern="CANARY|inside", path="d")):
        try:
            got = call()
            reads += 1
            leaks += {secret!r} in got or "outside-only" in got
        except Exception:
            pass
    try:
        gg.tools.write_file(path="d/w.txt", content="w")
    except Exception:
        pass
stop = True
t.join()
gg.session.finish(f"leaks={{leaks}} reads={{reads}}")
"""


def test_a_code_mode_program_racing_its_own_tool_calls_never_escapes(arena: dict[str, Any]) -> None:
    ws, out, secret = arena["ws"], arena["out"], arena["secret"]
    for p in ("d/canary.txt", "f", "l", "s"):
        (ws / p).unlink()
    (ws / "d").rmdir()
    source = PROGRAM.format(out=str(out), n=300, secret=secret)
    reply = gg.Reply(
        tool_calls=(gg.ToolCall(name="submit_program", arguments={"program": source}),)
    )
    model = ScriptedModel([reply])
    result = gg.Agent(model=model, workspace=ws, mode="code", language="python").run("race")
    assert isinstance(result.ending, gg.Finish), result
    summary = result.ending.summary
    assert summary.startswith("leaks=0 ") and int(summary.split("reads=")[1]) > 20, summary
    assert not (out / "w.txt").exists()


# ---------------------------------------------------------------- other host-side readers


def test_skills_planted_through_symlinks_out_are_not_read(tmp_path: Path) -> None:
    from gg.skills import discover_skills

    out = tmp_path / "out"
    (out / "evil").mkdir(parents=True)
    (out / "evil/SKILL.md").write_text("---\nname: evil\ndescription: outside\n---\nSECRET\n")
    ws = tmp_path / "ws"
    (ws / ".gg").mkdir(parents=True)
    (ws / ".gg/skills").symlink_to(out)  # the whole skills dir points out
    (ws / "skills/fine").mkdir(parents=True)
    (ws / "skills/fine/SKILL.md").write_text("---\nname: fine\ndescription: inside\n---\nok\n")
    (ws / "skills/linked").symlink_to(out / "evil")  # one skill folder points out
    (ws / "skills/fine/on_use.py").symlink_to(out / "evil/SKILL.md")  # the script points out
    skills = discover_skills(ws)
    assert "evil" not in skills and skills["fine"].instructions == "ok"
    assert skills["fine"].script is None
