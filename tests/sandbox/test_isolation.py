"""SPEC M3 under every isolation layer this machine supports (forced by GG_SANDBOX).

A program cannot read or write outside its workspace, reach the network, see
gg's environment, signal other processes or outlive its turn; gg is unharmed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest
from sandbox_support import Arena, Recorder, TcpServer, leftover_processes

from gg.errors import SandboxError
from gg.sandbox import Isolation, Sandbox
from gg.sandbox.accounts import SLOTS, UID_BASE, uid_slot


def _escape_program(arena: Arena, server: TcpServer) -> str:
    outside = arena.canary.parent
    return f'''
import os, socket, subprocess, sys
found = []
def attempt(name, fn):
    try:
        value = fn()
        found.append(f"{{name}}: OK {{str(value)[:80]}}")
    except BaseException as exc:
        found.append(f"{{name}}: denied {{type(exc).__name__}}")

attempt("read canary", lambda: open({str(arena.canary)!r}).read())
attempt("list outside", lambda: os.listdir({str(outside)!r}))
attempt("write canary", lambda: open({str(arena.canary)!r}, "a").write("x"))
attempt("chmod canary", lambda: os.chmod({str(arena.canary)!r}, 0o666))
attempt("new file outside", lambda: open({str(outside / "new.txt")!r}, "w").write("x"))
attempt("write /tmp", lambda: open("/tmp/{arena.marker}", "w").write("x"))
attempt("write /usr", lambda: open("/usr/{arena.marker}", "w").write("x"))
attempt("connect", lambda: socket.create_connection(("127.0.0.1", {server.port}), timeout=2))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
attempt("unix socket", lambda: socket.socket(socket.AF_UNIX))  # seccomp, in every layer
def unshare_user():
    import ctypes
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
attempt("new namespace", unshare_user)
attempt("signal gg", lambda: os.kill({os.getpid()}, 0))
attempt("gg environ", lambda: open("/proc/{os.getpid()}/environ", "rb").read())
attempt("root home", lambda: os.listdir("/root"))
attempt("shadow", lambda: open("/etc/shadow").read())
print(dict(os.environ))
try:
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
except OSError:  # Landlock layers: no /proc at all
    pids = ["self", "1", str(os.getppid())]
for pid in pids:
    try:
        print(open(f"/proc/{{pid}}/environ", "rb").read())
    except OSError:
        pass
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{arena.marker}"],
                 start_new_session=True)
open("inside.txt", "w").write("written inside")
print("\\n".join(found))
'''


PY_DENIED = (
    "read canary",
    "write canary",
    "chmod canary",
    "new file outside",
    "write /usr",
    "connect",
    "udp",
    "unix socket",
    "new namespace",
    "signal gg",
    "gg environ",
    "shadow",
)
JS_DENIED = (
    "read canary",
    "write canary",
    "env",
    "process.env",
    "connect",
    "fetch",
    "run",
    "import remote",
    "ffi",
    "environ",
)


def _assert_contained(arena: Arena, server: TcpServer, secret: str, text: str) -> None:
    assert arena.secret not in text
    assert secret not in text
    assert arena.canary_intact()
    assert not (arena.canary.parent / "new.txt").exists()
    assert not os.path.exists(f"/tmp/{arena.marker}")
    assert not os.path.exists(f"/usr/{arena.marker}")
    assert server.connections == 0
    assert leftover_processes(arena.marker) == []


async def test_python_program_stays_inside(
    sandbox: Sandbox, arena: Arena, secret_env: str, tcp_server: TcpServer
) -> None:
    result = await sandbox.run(
        _escape_program(arena, tcp_server), language="python", workspace=arena.workspace,
        tools=[], handler=Recorder(),
    )  # fmt: skip
    text = f"{result.output}\n{result.error}\n{result.returned}"
    assert result.error is None, text
    for attempt in PY_DENIED:
        assert f"{attempt}: denied" in result.output, text
    if sandbox.isolation is not Isolation.BWRAP:  # bubblewrap gives a private, writable /tmp
        assert "write /tmp: denied" in result.output, text
    assert (arena.workspace / "inside.txt").read_text() == "written inside"
    _assert_contained(arena, tcp_server, secret_env, text)
    again = await sandbox.run(
        "print('alive')", language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert again.output == "alive\n" and again.error is None


_JS_ESCAPES = """
const found = [];
async function attempt(name, fn) {
  try { const v = await fn(); found.push(`${name}: OK ${String(v).slice(0, 80)}`); }
  catch (e) { found.push(`${name}: denied ${e.name}`); }
}
await attempt("read canary", () => Deno.readTextFile(CANARY));
await attempt("write canary", () => Deno.writeTextFile(CANARY, "x", { append: true }));
await attempt("env", () => Deno.env.get("OPENAI_API_KEY"));
await attempt("process.env", () => JSON.stringify(process.env));
await attempt("connect", () => Deno.connect({ hostname: "127.0.0.1", port: PORT }));
await attempt("fetch", () => fetch(`http://127.0.0.1:${PORT}/`));
await attempt("run", () => new Deno.Command("/bin/sh", { args: ["-c", "id"] }).output());
await attempt("import remote", () => import(`http://127.0.0.1:${PORT}/x.js`));
await attempt("ffi", () => Deno.dlopen("/usr/lib/x86_64-linux-gnu/libc.so.6", {}));
await attempt("write /tmp outside", () => Deno.writeTextFile(`/tmp/${MARKER}`, "x"));
await attempt("environ", () => Deno.readTextFile("/proc/self/environ"));
await attempt("worker", () => new Promise((ok, bad) => {
  const code = "data:text/javascript,postMessage(typeof Deno.readTextFileSync)";
  const w = new Worker(code, { type: "module" });
  w.onmessage = (e) => { w.terminate(); ok(e.data); };
  w.onerror = (e) => { e.preventDefault(); bad(e); };
}));
await gg.tools.writeNote({ text: "from js" });
console.log(found.join("\\n"));
"""


async def test_javascript_program_stays_inside(
    sandbox: Sandbox, arena: Arena, secret_env: str, tcp_server: TcpServer
) -> None:
    from gg.models.base import ToolSpec

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    tools = [ToolSpec(name="write_note", description="Note.", parameters=schema)]
    program = (
        f"const CANARY = {str(arena.canary)!r}; const PORT = {tcp_server.port}; "
        f"const MARKER = {arena.marker!r};\n" + _JS_ESCAPES
    )
    recorder = Recorder()
    result = await sandbox.run(
        program, language="javascript", workspace=arena.workspace, tools=tools, handler=recorder
    )
    text = f"{result.output}\n{result.error}\n{result.returned}"
    assert result.error is None, text
    for attempt in JS_DENIED:
        assert f"{attempt}: denied" in result.output, text
    if sandbox.isolation is not Isolation.BWRAP:  # bubblewrap gives a private, writable /tmp
        assert "write /tmp outside: denied" in result.output, text
    assert [c.name for c in recorder.calls] == ["write_note"]
    _assert_contained(arena, tcp_server, secret_env, text)


async def test_nothing_outlives_the_program(sandbox: Sandbox, arena: Arena) -> None:
    program = f"""
import os, subprocess, sys, time
# a daemon that leaves the session, a plain child, and a grandchild that double-forks
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "{arena.marker}"],
                 start_new_session=True, stdout=subprocess.DEVNULL)
subprocess.Popen(["/bin/sh", "-c", "sleep 120; : {arena.marker}"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        sleeper = [sys.executable, "-c", "import time; time.sleep(120)", "{arena.marker}"]
        os.execv(sys.executable, sleeper)
    os._exit(0)
time.sleep(0.5)
print("spawned")
"""
    result = await sandbox.run(
        program, language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert result.error is None, result
    assert result.output == "spawned\n"
    assert leftover_processes(arena.marker) == []


async def test_the_environment_is_built_from_nothing(
    sandbox: Sandbox, arena: Arena, secret_env: str
) -> None:
    program = "import os\nsorted(os.environ)"
    result = await sandbox.run(
        program, language="python", workspace=arena.workspace, tools=[], handler=Recorder()
    )
    assert result.returned is not None
    names = eval(result.returned)  # a list of names, from our own program
    assert set(names) <= {"PATH", "LANG", "HOME", "TMPDIR", "PWD", "GIT_CONFIG_GLOBAL"}
    assert secret_env not in result.output


async def test_runs_as_a_dedicated_uid_when_gg_is_root(sandbox: Sandbox, arena: Arena) -> None:
    if os.geteuid() != 0:
        pytest.skip("gg is not root here")
    result = await sandbox.run(
        "import os\n(os.getuid(), os.geteuid(), os.getgroups())", language="python",
        workspace=arena.workspace, tools=[], handler=Recorder(),
    )  # fmt: skip
    assert result.returned is not None
    uid, euid, groups = eval(result.returned)
    assert uid == euid and uid >= 61001 and groups in ([], [61000])


async def test_a_workspace_under_a_private_directory(sandbox: Sandbox, tmp_path: Path) -> None:
    """pytest's tmp_path sits under a 0700 directory the slot uid cannot search."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    program = "open('made.txt', 'w').write('ok')\nimport os\nsorted(os.listdir('.'))"
    result = await sandbox.run(
        program, language="python", workspace=workspace, tools=[], handler=Recorder()
    )
    assert (result.error, result.returned) == (None, "['made.txt']")
    assert (workspace / "made.txt").read_text() == "ok"
    shell = await sandbox.run_shell("cat made.txt", workspace=workspace, timeout_s=10)
    assert shell.output == "ok"


def test_slot_uids_are_exclusive_while_held_and_found_again_once_free(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every slot can be held at once, each by one holder; then none is left (retryable);
    a freed slot is the next one found, wherever the search starts."""
    # a lock directory of this test's own: the real one serves the other tests' sandboxes
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with contextlib.ExitStack() as held:
        uids = [held.enter_context(uid_slot()) for _ in range(SLOTS)]
        assert sorted(uids) == list(range(UID_BASE, UID_BASE + SLOTS))
        with pytest.raises(SandboxError, match="all 256 sandbox uids are busy") as info:
            held.enter_context(uid_slot())
        assert info.value.retryable
    with contextlib.ExitStack() as held:
        first = held.enter_context(uid_slot())
        rest = [held.enter_context(uid_slot()) for _ in range(SLOTS - 1)]
        assert first not in rest and len(set(rest)) == SLOTS - 1
        held.close()
    with uid_slot() as again:
        assert UID_BASE <= again < UID_BASE + SLOTS
