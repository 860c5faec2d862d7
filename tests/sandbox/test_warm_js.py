"""The warm Deno (issue 11): each JavaScript program gets a confined Deno started before it.

Two warm paths: by default a Deno exec'd by a warm zygote's child (``forked_js``;
its own tests: ``test_warm_js_forked.py``), and for read-only programs (or after
such a zygote failed) a spare started whole, as a cold start is (:mod:`gg.sandbox.deno`).
The tests that look at spares set ``forked_js = False``; the others run on the
default path. Programs of one sandbox run one after the other on the warm path (the
second and later ones find a Deno started while the previous one ran); the
``sandbox`` fixture runs a test under each isolation layer this machine supports.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sandbox_support import Arena, leftover_processes

from gg.errors import SandboxError
from gg.models.base import ToolSpec
from gg.sandbox import CallAnswer, CallRequest, Isolation, ProgramResult, Sandbox
from gg.sandbox.accounts import SANDBOX_GID
from gg.sandbox.core import Language
from gg.sandbox.deno import Key as DenoKey
from gg.sandbox.deno import Spare, Spares
from gg.sandbox.sdk import sdk_source


async def _answer(request: CallRequest) -> CallAnswer:
    return CallAnswer(ok=True, value=None)


async def _run(
    sandbox: Sandbox,
    workspace: Path,
    program: str,
    *,
    read_only: bool = False,
    language: Language = "javascript",
) -> ProgramResult:
    return await sandbox.run(program, language=language, workspace=workspace, tools=[],
                             handler=_answer, read_only=read_only)  # fmt: skip


def _runs(sandbox: Sandbox, workspace: Path, programs: list[str]) -> list[ProgramResult]:
    async def go() -> list[ProgramResult]:
        return [await _run(sandbox, workspace, p) for p in programs]

    return asyncio.run(go())


SPARES = 2
"""Warm Deno processes kept per workspace (``gg.sandbox.deno``: two, issue 11)."""


def _spares(sandbox: Sandbox, workspace: Path, read_only: bool = False) -> list[Spare]:
    key = sandbox._deno_key(workspace.resolve(), read_only)
    return list(sandbox._spares._ready.get(key, []))


def _holders(path: Path) -> list[str]:
    """Processes (of any uid gg may inspect) with ``path`` open."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            links = [os.readlink(f"/proc/{entry.name}/fd/{fd}")
                     for fd in os.listdir(f"/proc/{entry.name}/fd")]  # fmt: skip
        except OSError:
            continue
        if any(link == str(path) for link in links):
            found.append(entry.name)
    return found


_FIRST = """
globalThis.LEAK = 1;
globalThis.SHARED = new SharedArrayBuffer(8);
Object.prototype.polluted = 3;
const held = Deno.openSync("held.txt", { write: true, create: true });
held.writeSync(new TextEncoder().encode("open"));
globalThis.HELD = held;
setInterval(() => Deno.writeTextFileSync("beat", ".", { append: true }), 2);
const code = "data:text/javascript,setInterval(() => postMessage(1), 2)";
const worker = new Worker(code, { type: "module" });
worker.onmessage = () => Deno.writeTextFileSync("worker-beat", ".", { append: true });
const tmp = Deno.makeTempFileSync({ prefix: "left-" });
const beating = () => {
  try { return Deno.statSync("worker-beat").size > 0; } catch { return false; }
};
while (!beating()) await new Promise((resolve) => setTimeout(resolve, 5));
console.log(tmp);
"""

_SECOND = """
const dir = TMP.slice(0, TMP.lastIndexOf("/"));
let left;
try {
  left = [...Deno.readDirSync(dir)].some((e) => e.name.startsWith("left-"));
} catch {
  left = false; // the first program's private tmp is gone (or out of reach)
}
const seen = [globalThis.LEAK, globalThis.SHARED, {}.polluted, globalThis.HELD];
console.log(...seen.map((v) => typeof v), left);
"""


def test_no_state_leaks_between_javascript_programs(sandbox: Sandbox, arena: Arena) -> None:
    """A global, a prototype, a timer, a Worker, an open file, a temp file: none survives."""
    tmp_path = arena.workspace

    async def go() -> tuple[ProgramResult, ProgramResult, list[str], int, int]:
        one = await _run(sandbox, tmp_path, _FIRST)
        assert one.error is None, one
        holders = _holders(tmp_path / "held.txt")  # when run returns, not only later
        beats = [(tmp_path / name).stat().st_size for name in ("beat", "worker-beat")]
        await asyncio.sleep(0.3)
        after = [(tmp_path / name).stat().st_size for name in ("beat", "worker-beat")]
        assert after == beats, "a timer or a Worker of the first program still runs"
        second = f"const TMP = {one.output.strip()!r};\n" + _SECOND
        two = await _run(sandbox, tmp_path, second)
        return one, two, holders, beats[0], beats[1]

    one, two, holders, beat, worker_beat = asyncio.run(go())
    assert one.error is None, one
    assert beat > 0 and worker_beat > 0, one
    assert holders == [], holders
    assert two.error is None, two
    assert two.output.strip() == "undefined undefined undefined undefined false", two.output


def test_each_program_runs_in_a_fresh_deno(default_sandbox: Sandbox, tmp_path: Path) -> None:
    """The spare started beforehand runs the program; it is never used for a second one."""
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)

    async def go() -> list[tuple[int, ProgramResult]]:
        default_sandbox.warm_up(tmp_path, language="javascript")
        await asyncio.sleep(0)
        seen = []
        for _ in range(3):
            ready = _spares(default_sandbox, tmp_path)
            assert len(ready) == SPARES and all(s.alive() for s in ready), ready
            spare = ready[0]  # the oldest goes first
            result = await _run(default_sandbox, tmp_path, "console.log(performance.now() > 0);")
            assert not spare.alive()  # used once, then gone
            await asyncio.sleep(0)  # its replacement starts once the program has ended
            seen.append((spare.begun.child.proc.pid, result))  # type: ignore[attr-defined]
        await default_sandbox.aclose()
        return seen

    seen = asyncio.run(go())
    assert len({pid for pid, _ in seen}) == 3, seen
    assert all((r.output, r.error) == ("true\n", None) for _, r in seen), seen


def test_a_program_that_breaks_its_deno_gets_an_error_and_the_next_runs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    killers = {
        "exit": "console.log('bye');\nDeno.exit(3);\n",
        "loop": "while (true) {}\n",
        "memory": "const a = [];\nwhile (true) a.push(new Array(1e6).fill(a.length));\n",
        "stack": "function f() { return f() + 1; }\nf();\n",
        "signal": "Deno.kill(Deno.pid, 'SIGKILL');\nawait new Promise(() => {});\n",
        "abort": "Deno.exit(-1);\n",
        "workers": "for (let i = 0; i < 1e5; i++) new Worker("
        "'data:text/javascript,await new Promise(() => {})', { type: 'module' });\n",
        "garbage": "Deno.openSync('/dev/fd/3', {write: true}).writeSync("
        'new TextEncoder().encode(\'{"kind": "result"}\\n\'));\nawait new Promise(() => {});\n',
    }
    for name, killer in killers.items():
        bad, good = _runs(sandbox, tmp_path, [killer, "console.log(6 * 7);"])
        assert bad.error is not None and bad.compile_problem is None, (name, bad)
        assert (good.output, good.error) == ("42\n", None), (name, good)


def test_a_dead_spare_is_replaced_never_used(default_sandbox: Sandbox, tmp_path: Path) -> None:
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)

    async def go() -> tuple[ProgramResult, ProgramResult]:
        first = await _run(default_sandbox, tmp_path, "console.log(1);")
        await asyncio.sleep(0)
        spare = _spares(default_sandbox, tmp_path)[0]  # the one the next program would take
        pid = spare.begun.child.proc.pid  # type: ignore[attr-defined]
        os.killpg(pid, 9)
        while spare.alive():
            await asyncio.sleep(0.01)
        second = await _run(default_sandbox, tmp_path, "console.log(2);")
        assert spare not in _spares(default_sandbox, tmp_path)
        await default_sandbox.aclose()
        return first, second

    first, second = asyncio.run(go())
    assert (first.output, second.output, second.error) == ("1\n", "2\n", None), second


def test_a_waiting_spare_names_no_workspace(sandbox: Sandbox, arena: Arena) -> None:
    """Neither a command line nor a working directory in ``/proc`` ties it to the workspace."""
    sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)
    workspace = arena.workspace

    async def go() -> list[str]:
        sandbox.warm_up(workspace, language="javascript")
        await asyncio.sleep(0)
        assert _spares(sandbox, workspace), "warm_up started no Deno"
        await asyncio.sleep(1.0)  # Deno itself is up and waiting by now
        found = leftover_processes(str(workspace))
        result = await _run(sandbox, workspace, "console.log(Deno.cwd());")
        assert result.output.strip() == str(workspace.resolve()), result
        await sandbox.aclose()
        return found

    assert asyncio.run(go()) == []


def test_a_workspace_under_a_private_directory(sandbox: Sandbox, tmp_path: Path) -> None:
    """Parents the sandbox uid cannot search: the program still starts in its workspace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    results = _runs(sandbox, workspace, ["console.log(Deno.cwd());"] * 2)
    assert [r.output.strip() for r in results] == [str(workspace.resolve())] * 2, results


def test_a_read_only_program_never_gets_a_writable_spare(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    write = "Deno.writeTextFileSync('made.txt', 'x'); console.log('wrote');"

    async def go() -> list[ProgramResult]:
        out = [await _run(default_sandbox, tmp_path, write)]
        (tmp_path / "made.txt").unlink()
        out.append(await _run(default_sandbox, tmp_path, write, read_only=True))
        out.append(await _run(default_sandbox, tmp_path, write, read_only=True))
        exists = (tmp_path / "made.txt").exists()
        out.append(await _run(default_sandbox, tmp_path, write))
        await default_sandbox.aclose()
        assert not exists
        return out

    if not default_sandbox.enforces_read_only():
        return
    plain, ro1, ro2, again = asyncio.run(go())
    assert plain.error is None and again.error is None, (plain, again)
    assert ro1.error is not None and ro2.error is not None, (ro1, ro2)
    assert (tmp_path / "made.txt").read_text() == "x"


def test_a_compile_error_on_the_warm_path(default_sandbox: Sandbox, tmp_path: Path) -> None:
    programs = ["console.log(1);", "let ok = 1;\nlet x = ;\n", "export default 2;"]
    one, two, three = _runs(default_sandbox, tmp_path, programs)
    assert one.error is None, one
    problem = two.compile_problem
    assert problem is not None and (problem.line, problem.column) == (2, 9), two
    assert three.returned == "2", three


def test_cold_javascript_keeps_no_spare(tmp_path: Path) -> None:
    async def go() -> tuple[ProgramResult, list[Spare]]:
        sandbox = Sandbox(warm=False)
        sandbox.warm_up(tmp_path, language="javascript")
        result = await _run(sandbox, tmp_path, "export default 6 * 7;")
        await asyncio.sleep(0.05)
        kept = _spares(sandbox, tmp_path)
        await sandbox.aclose()
        return result, kept

    result, kept = asyncio.run(go())
    assert result.returned == "42" and kept == [], (result, kept)


def test_closing_the_sandbox_ends_its_spares(default_sandbox: Sandbox, tmp_path: Path) -> None:
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)

    async def go() -> list[Spare]:
        await _run(default_sandbox, tmp_path, "console.log(1);")
        await asyncio.sleep(0)
        spares = _spares(default_sandbox, tmp_path)
        await default_sandbox.aclose()
        return spares

    spares = asyncio.run(go())
    assert len(spares) == SPARES, spares
    deadline = time.monotonic() + 5
    while any(s.begun.child.poll() is None for s in spares) and time.monotonic() < deadline:
        time.sleep(0.01)
    for spare in spares:
        assert spare.begun.child.poll() is not None
        assert spare.job.run_dir is not None and not spare.job.run_dir.exists()


def test_a_spare_for_a_replaced_workspace_is_not_used(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    """A workspace removed and made again at its path is another directory: a fresh Deno."""
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def go() -> tuple[ProgramResult, ProgramResult]:
        await _run(default_sandbox, workspace, "Deno.writeTextFileSync('old.txt', 'x');")
        await asyncio.sleep(0)
        spares = _spares(default_sandbox, workspace)
        os.rename(workspace, tmp_path / "gone")
        workspace.mkdir()
        assert spares and not any(s.alive() for s in spares), spares
        listing = await _run(default_sandbox, workspace, "console.log([...Deno.readDirSync('.')]);")
        write = await _run(default_sandbox, workspace, "Deno.writeTextFileSync('new.txt', 'y');")
        await default_sandbox.aclose()
        return listing, write

    listing, write = asyncio.run(go())
    assert (listing.output, listing.error, write.error) == ("[]\n", None, None), listing
    assert (workspace / "new.txt").read_text() == "y"
    assert not (tmp_path / "gone" / "new.txt").exists()


def test_spares_are_kept_for_a_few_workspaces_only(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)

    async def go() -> list[int]:
        for n in range(6):
            (tmp_path / str(n)).mkdir()
            await _run(default_sandbox, tmp_path / str(n), "console.log(1);")
        await asyncio.sleep(0)
        kept = [len(_spares(default_sandbox, tmp_path / str(n))) for n in range(6)]
        await default_sandbox.aclose()
        return kept

    assert asyncio.run(go()) == [0, 0] + [SPARES] * 4


def test_protected_files_stay_read_only_on_the_warm_path(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    """Bubblewrap's read-only binds (``gg.toml``, issue 9) hold for a spare's program too."""
    if default_sandbox.isolation is not Isolation.BWRAP:
        return
    (tmp_path / "gg.toml").write_text("[session]\n")
    default_sandbox.protect([Path("gg.toml")], root=tmp_path)
    attack = (
        "let out;\ntry { Deno.writeTextFileSync('gg.toml', 'pwned'); out = 'wrote'; }\n"
        "catch (e) { out = e.name; }\nconsole.log(out);\n"
    )
    results = _runs(default_sandbox, tmp_path, [attack, attack, attack])
    assert [r.error for r in results] == [None] * 3, results
    assert all(r.output.strip() != "wrote" for r in results), results
    assert (tmp_path / "gg.toml").read_text() == "[session]\n"


def _tool(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, parameters={"type": "object"})


def test_a_spare_preloads_the_last_sdk_and_a_new_sdk_still_wins(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    """The next spare loads the last program's SDK; a program with other tools gets its own."""
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)
    probe = "console.log(typeof gg.tools.alpha, typeof gg.tools.beta);"

    async def go() -> tuple[list[ProgramResult], list[str | None]]:
        out, preloaded = [], []
        for tools in ([_tool("alpha")], [_tool("alpha")], [_tool("beta")], [_tool("beta")]):
            await asyncio.sleep(0)
            spares = _spares(default_sandbox, tmp_path)
            preloaded.append(spares[-1].sdk if spares else None)  # the newest
            out.append(await default_sandbox.run(probe, language="javascript", workspace=tmp_path,
                                                 tools=tools, handler=_answer))  # fmt: skip
        await default_sandbox.aclose()
        return out, preloaded

    results, preloaded = asyncio.run(go())
    alpha = sdk_source([_tool("alpha")], language="javascript")
    beta = sdk_source([_tool("beta")], language="javascript")
    assert preloaded == [None, alpha, alpha, beta], preloaded
    seen = [(r.output.strip(), r.error) for r in results]
    expect = [("function undefined", None)] * 2 + [("undefined function", None)] * 2
    assert seen == expect, results


def test_a_replacement_starts_as_soon_as_a_spare_is_taken(
    default_sandbox: Sandbox, tmp_path: Path
) -> None:
    """While a program runs, the next program's Deno is already starting (a fresh one)."""
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)
    during: list[list[Spare]] = []

    async def answer(request: CallRequest) -> CallAnswer:
        during.append(_spares(default_sandbox, tmp_path))
        return CallAnswer(ok=True, value=None)

    async def go() -> tuple[ProgramResult, Spare]:
        default_sandbox.warm_up(tmp_path, language="javascript")
        await asyncio.sleep(0)
        first = _spares(default_sandbox, tmp_path)[0]
        result = await default_sandbox.run("await gg.tools.noop();", language="javascript",
                                           workspace=tmp_path, tools=[_tool("noop")],
                                           handler=answer)  # fmt: skip
        await default_sandbox.aclose()
        return result, first

    result, first = asyncio.run(go())
    assert result.error is None, result
    assert len(during) == 1 and len(during[0]) == SPARES, during
    assert first not in during[0], "the spare that ran the program was offered again"


def _pipe_holders(pipe: int) -> list[int]:
    """The pids (not this one) with the other end of ``pipe`` open: same ``pipe:[inode]``."""
    link = f"pipe:[{os.fstat(pipe).st_ino}]"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if any(os.readlink(f"/proc/{entry}/fd/{fd}") == link
                   for fd in os.listdir(f"/proc/{entry}/fd")):  # fmt: skip
                found.append(int(entry))
    return found


def _kill_dead(spare: Spare) -> int:
    """Kill ``spare``'s Deno and wait until its answer pipe has no reader; its pid.

    Killing bubblewrap's group is not always enough: its inner process leads a session of
    its own (``--new-session``) and dies with bubblewrap only once it has set its death
    signal, so a kill at its very start leaves it (it would end at gg's close of the pipe,
    which this test keeps open). So every process still holding the pipe is killed too.
    """
    pid: int = spare.begun.child.proc.pid  # type: ignore[attr-defined]
    os.killpg(pid, 9)
    spare.begun.child.proc.wait()  # type: ignore[attr-defined]
    answers = spare.begun.fds[2]
    assert answers is not None
    poller = select.poll()
    poller.register(answers, select.POLLOUT)
    deadline = time.monotonic() + 10
    while not any(e & select.POLLERR for _, e in poller.poll(50)):
        assert time.monotonic() < deadline, "the dead spare's pipe still has a reader"
        for holder in _pipe_holders(answers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(holder, 9)
    return pid


def test_a_spare_that_dies_as_it_is_told_to_go_runs_the_program_anew(
    default_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spare dies between gg's check and its go (the race ``take`` cannot close):
    nothing of the program ran, so a Deno started then runs it, correctly."""
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)
    taken = Spares.take
    killed: list[int] = []

    def take_and_kill(self: Spares, key: DenoKey, sdk: str) -> Spare:
        spare = taken(self, key, sdk)
        if not killed:
            killed.append(_kill_dead(spare))
        return spare

    async def go() -> list[ProgramResult]:
        default_sandbox.warm_up(tmp_path, language="javascript")
        await asyncio.sleep(0)
        runs = [await _run(default_sandbox, tmp_path, f"console.log({n} * 7);") for n in (6, 7)]
        await default_sandbox.aclose()
        return runs

    monkeypatch.setattr(Spares, "take", take_and_kill)
    first, second = asyncio.run(go())
    assert killed
    assert (first.output, first.error) == ("42\n", None), first
    assert (second.output, second.error) == ("49\n", None), second


def test_when_every_deno_dies_before_its_go_the_run_is_a_sandbox_error(
    default_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm spare and the Deno started for the retry both die before their go: a
    :class:`SandboxError` that says so, not an internal exception."""
    default_sandbox.forked_js = False  # the started-Deno path (read-only programs, fallback)
    go = Spare.go

    async def die_then_go(self: Spare) -> None:
        _kill_dead(self)
        await go(self)

    async def run() -> ProgramResult:
        try:
            return await _run(default_sandbox, tmp_path, "console.log(1);")
        finally:
            await default_sandbox.aclose()

    monkeypatch.setattr(Spare, "go", die_then_go)
    with pytest.raises(SandboxError, match="could not start the program"):
        asyncio.run(run())


_WATCH = r"""
import os, sys, threading
marker, me = sys.argv[1], sys.argv[2]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
found = set()
while not stop.is_set():
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid in (me, str(os.getpid())):
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if marker.encode() in cmd or cwd == marker or cwd.startswith(marker + "/"):
            found.add(f"{pid}: {cmd[:100]!r} cwd={cwd}")
print("\n".join(sorted(found)))
"""
"""Scans ``/proc`` without pause, in a process of its own (no GIL shared with the loop),
until its stdin closes; then prints each process whose command line or cwd named the
marker (argv 1). Descriptors are not looked at: gg's own fork holds the ones it hands
bubblewrap (``--bind-fd``), and a Landlock rule is added through one, for microseconds."""


def _seen_while_starting(sandbox: Sandbox, workspace: Path, spares: int = 8) -> list[str]:
    """Start ``spares`` spares one after another; the processes that named ``workspace``."""
    watcher = subprocess.Popen(
        [sys.executable, "-c", _WATCH, str(workspace), str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip

    async def go() -> None:
        for _ in range(spares):
            spare = Spare.start(sandbox._deno_key(workspace, False))
            deadline = time.monotonic() + 10
            while spare.begun.child.poll() is None and time.monotonic() < deadline:
                if select.select([spare.begun.fds[1]], [], [], 0)[0]:
                    break  # its "ready" came: it is up and waits
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.3)
            spare.close()

    try:
        asyncio.run(go())
    finally:
        found, _ = watcher.communicate(timeout=60)
    return [line for line in found.splitlines() if line]


def test_a_starting_spare_never_names_the_workspace(sandbox: Sandbox, arena: Arena) -> None:
    """Not even while it starts: from its first instruction to Deno waiting (issue 11).

    ``/proc`` is scanned without pause while spares start one after another, so a
    spare that passes through the workspace on its way (a ``chdir`` into it and out
    again) is seen.
    """
    assert _seen_while_starting(sandbox, arena.workspace.resolve()) == []


def _grant_search(directory: Path, gid: int) -> None:
    """Give group ``gid`` search on ``directory`` by a POSIX ACL (mode 0700 stays)."""
    undefined = 0xFFFFFFFF
    entries = [(0x01, 7, undefined), (0x04, 0, undefined), (0x08, 1, gid),
               (0x10, 1, undefined), (0x20, 0, undefined)]  # fmt: skip
    data = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    os.setxattr(directory, "system.posix_acl_access", data)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to a sandbox uid")
def test_a_parent_searchable_by_an_acl_only_is_entered_by_path(
    sandbox: Sandbox, arena: Arena
) -> None:
    """Whether the sandbox uid reaches the workspace is tried, not read from mode bits.

    A 0700 parent whose ACL lets the sandbox group search it: the spare starts and
    waits in ``/`` (the runner enters the workspace by path), and the program runs in
    its workspace.
    """
    private = arena.root / "private"
    private.mkdir(mode=0o700)
    _grant_search(private, SANDBOX_GID)
    workspace = private / "ws"
    workspace.mkdir(mode=0o755)
    assert _seen_while_starting(sandbox, workspace, spares=2) == []
    results = _runs(sandbox, workspace, ["console.log(Deno.cwd());"] * 2)
    assert [r.output.strip() for r in results] == [str(workspace)] * 2, results
