"""Issue 9, item 7: isolation gaps, played for real against every layer this machine has.

Datagrams to a host AF_UNIX socket, daemons and SysV IPC left behind, disk-fill
turns, and the workspace ACL walk. Each attack runs in the real sandbox, as
root (gg's CI user) and, where the layer works differently, as an unprivileged
user: a subprocess under ``setpriv --reuid=65534`` drives
:class:`gg.sandbox.Sandbox` on a workspace it owns. Each asserts that the
attack failed and that the next program in the same workspace runs normally.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.sandbox import CallAnswer, CallRequest, Isolation, Limits, Sandbox
from gg.sandbox.accounts import share_workspace
from nobody import as_nobody
from support import GUEST_CODE_PROBE

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
LIMITS = Limits(wall_s=20, cpu_s=15, memory_mb=512, processes=32, file_size_mb=512,
                write_bytes=64 << 20, write_files=5000)  # fmt: skip


# ------------------------------------------------------------------ fixtures


def _can_drop() -> str | None:
    if os.geteuid() != 0:
        return "the unprivileged variant needs root to start it"
    if not shutil.which("setpriv") or not shutil.which("unshare"):
        return "setpriv or unshare is missing"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"{SYSTEM_PYTHON} is missing"
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import sys;print(sys.version_info[:2])"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if probe.stdout.strip() != str(sys.version_info[:2]):
        return f"{SYSTEM_PYTHON} is not Python {sys.version_info[:2]} (gg's packages)"
    return None


@pytest.fixture(params=["root", "nobody"])
def who(request: pytest.FixtureRequest) -> str:
    """gg's own user (root here) or an unprivileged user driving the sandbox."""
    if request.param == "nobody" and (why := _can_drop()):
        pytest.skip(why)
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("gg is not root here")
    return str(request.param)


@dataclass
class Place:
    """A world-searchable root holding a workspace and an ``outside`` directory."""

    root: Path
    workspace: Path
    outside: Path
    token: str = field(default_factory=lambda: "gg" + secrets.token_hex(6))


@pytest.fixture
def place() -> Iterator[Place]:
    root = Path(tempfile.mkdtemp(prefix="gg-iso-", dir="/tmp"))
    os.chmod(root, 0o755)
    (root / "ws").mkdir()
    (root / "outside").mkdir(mode=0o755)
    yield Place(root, root / "ws", root / "outside")
    shutil.rmtree(root, ignore_errors=True)


class Receiver:
    """Host AF_UNIX datagram sockets (a world-writable path outside the workspace, and an
    abstract name) counting what they receive."""

    def __init__(self, directory: Path, token: str) -> None:
        self.path = str(directory / "host.sock")
        self.abstract = "\0" + token
        self.got: list[bytes] = []
        self._socks = []
        for address in (self.path, self.abstract):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.bind(address)
            s.settimeout(0.1)
            self._socks.append(s)
        os.chmod(self.path, 0o777)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for s in self._socks:
                try:
                    self.got.append(s.recv(4096))
                except (TimeoutError, OSError):
                    continue

    def close(self) -> None:
        time.sleep(0.3)  # anything in flight arrives
        self._stop.set()
        self._thread.join(5)
        for s in self._socks:
            s.close()


@pytest.fixture
def receiver(place: Place) -> Iterator[Receiver]:
    r = Receiver(place.outside, place.token)
    yield r
    r.close()


# ------------------------------------------------------------------ drivers


async def _answer(request: CallRequest) -> CallAnswer:
    return CallAnswer(ok=True)


async def _drive(job: dict[str, Any]) -> dict[str, Any]:
    box = Sandbox(limits=Limits(**job["limits"]))
    ws = Path(job["workspace"])
    if job.get("shell"):
        r = await box.run_shell(job["program"], workspace=ws, timeout_s=job["limits"]["wall_s"])
        return {"error": None, "limit": r.limit, "output": r.output, "exit": r.exit_code}
    p = await box.run(job["program"], language=job.get("language", "python"), workspace=ws,
                      tools=[], handler=_answer)  # fmt: skip
    return {"error": p.error, "limit": p.limit, "output": p.output, "exit": None}


_DRIVER = """
import asyncio, json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1].rsplit("/", 1)[0]]  # tests/security, tests
import test_isolation_gaps as t
print("RESULT " + json.dumps(asyncio.run(t._drive(json.loads(sys.argv[2])))))
"""


def run(place: Place, who: str, program: str, *, limits: Limits = LIMITS,
        shell: bool = False, language: str = "python") -> dict[str, Any]:  # fmt: skip
    """Run ``program`` in the sandbox as ``who``; ``{"error", "limit", "output", "exit"}``."""
    fields = ("wall_s", "cpu_s", "memory_mb", "processes", "file_size_mb", "write_bytes",
              "write_files")  # fmt: skip
    job = {"program": program, "workspace": str(place.workspace), "shell": shell,
           "language": language, "limits": {f: getattr(limits, f) for f in fields}}  # fmt: skip
    if who == "root":
        return asyncio.run(_drive(job))
    for path in (place.workspace, *place.workspace.rglob("*")):
        os.lchown(path, NOBODY, NOBODY)
    src = str(Path(gg.__file__).resolve().parents[1])
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "GG_SANDBOX": os.environ["GG_SANDBOX"],
           "PYTHONPATH": f"{src}:{sysconfig.get_paths()['purelib']}"}  # fmt: skip
    done = subprocess.run(
        as_nobody([SYSTEM_PYTHON, "-c", _DRIVER, str(Path(__file__).parent), json.dumps(job)]),
        env=env, capture_output=True, text=True, timeout=120, check=False, cwd="/tmp",
    )  # fmt: skip
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert lines, f"the unprivileged driver failed:\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1][7:])
    return result


def assert_runs_normally(place: Place, who: str) -> None:
    """The next program in the same workspace runs to its end and can write there."""
    r = run(place, who, "open('after.txt', 'w').write('ok')\nprint('after', 6 * 7)\n")
    assert r["error"] is None and r["limit"] is None, r
    assert "after 42" in r["output"]
    assert (place.workspace / "after.txt").read_text() == "ok"


# ------------------------------------------------------------------ datagrams

DATAGRAMS = r"""
import ctypes, os, socket
PATH, ABSTRACT = {path!r}, {abstract!r}
tried = {{}}
def attempt(name, fn):
    try:
        fn(); tried[name] = "sent"
    except OSError as e:
        tried[name] = e.errno
def pair(kind):
    return socket.socketpair(socket.AF_UNIX, kind)
for addr_name, addr in (("path", PATH), ("abstract", ABSTRACT)):
    for kind_name, kind in (("dgram", socket.SOCK_DGRAM),
                            ("dgram_cloexec", socket.SOCK_DGRAM | socket.SOCK_CLOEXEC),
                            ("dgram_nonblock", socket.SOCK_DGRAM | socket.SOCK_NONBLOCK),
                            ("stream", socket.SOCK_STREAM), ("seqpacket", socket.SOCK_SEQPACKET)):
        def sendto(kind=kind, addr=addr):
            a, b = pair(kind); a.sendto(b"sendto-" + addr_name.encode(), addr)
        def sendmsg(kind=kind, addr=addr):
            a, b = pair(kind); a.sendmsg([b"sendmsg"], [], 0, addr)
        def connect(kind=kind, addr=addr):
            a, b = pair(kind); a.connect(addr); a.send(b"connect")
        attempt(f"{{kind_name}}-{{addr_name}}-sendto", sendto)
        attempt(f"{{kind_name}}-{{addr_name}}-sendmsg", sendmsg)
        attempt(f"{{kind_name}}-{{addr_name}}-connect", connect)
    def fresh(addr=addr):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"socket", addr)
    attempt(f"socket-{{addr_name}}", fresh)
libc = ctypes.CDLL(None, use_errno=True)
fds = (ctypes.c_int * 2)()
raw = libc.syscall(53, 1, 2, 0, fds)  # socketpair(AF_UNIX, SOCK_DGRAM) by number
tried["raw-socketpair-dgram"] = "made" if raw == 0 else ctypes.get_errno()
a, b = socket.socketpair()  # asyncio's self-pipe: stream, send without an address
a.send(b"x"); assert b.recv(1) == b"x"
print("TRIED", sorted(tried.items()))
print("LOCAL-OK")
"""


@pytest.mark.parametrize("who", ["root", "nobody"], indirect=True)
def test_datagrams_to_a_host_socket_never_arrive(
    layer: Isolation, who: str, place: Place, receiver: Receiver
) -> None:
    program = DATAGRAMS.format(path=receiver.path, abstract=receiver.abstract)
    r = run(place, who, program)
    assert r["error"] is None, r
    assert "LOCAL-OK" in r["output"]  # ordinary local channels still work
    assert "'made'" not in r["output"], r["output"]  # no datagram socket can exist
    receiver.close()
    assert receiver.got == [], f"the host socket received {receiver.got!r} under {layer.value}"
    assert_runs_normally(place, who)


ORDINARY = r"""
import asyncio, subprocess, multiprocessing.connection as mc, multiprocessing as mp
async def main():
    p = await asyncio.create_subprocess_exec("echo", "child", stdout=asyncio.subprocess.PIPE)
    return (await p.communicate())[0].decode().strip()
print("asyncio", asyncio.run(main()))
print("subprocess", subprocess.run(["sh", "-c", "echo piped | cat"], capture_output=True,
                                   text=True).stdout.strip())
a, b = mp.Pipe(); a.send({"k": 1}); print("mp-pipe", b.recv())
"""


def test_ordinary_local_channels_still_work(layer: Isolation, place: Place) -> None:
    r = run(place, "root" if os.geteuid() == 0 else "nobody", ORDINARY)
    assert r["error"] is None, r
    for expected in ("asyncio child", "subprocess piped", "mp-pipe {'k': 1}"):
        assert expected in r["output"], r["output"]


def test_deno_programs_still_work(layer: Isolation, place: Place) -> None:
    from gg.sandbox.host import host_facts

    if host_facts().deno is None:
        pytest.skip("no Deno here")
    program = (
        "const w = new Worker('data:text/javascript,self.onmessage=(e)=>"
        "self.postMessage(e.data*2)', {type: 'module'});\n"
        "const v = await new Promise((r) => {\n"
        "  w.onmessage = (e) => r(e.data); w.postMessage(21);\n});\n"
        "w.terminate();\nawait Deno.writeTextFile('x.txt', 'hi');\n"
        "console.log('deno', v, await Deno.readTextFile('x.txt'));\n"
    )
    r = run(place, "root" if os.geteuid() == 0 else "nobody", program, language="javascript")
    assert r["error"] is None, r
    assert "deno 42 hi" in r["output"]


# ------------------------------------------------------------------ left behind

DAEMON = r"""
import ctypes, os, time
from multiprocessing import shared_memory
ws = os.getcwd()
hide = os.path.join(ws, {token!r})
os.mkdir(hide)
libc = ctypes.CDLL(None, use_errno=True)
key = {key}
ipc = [libc.shmget(key, 4096, 0o1666), libc.msgget(key, 0o1666), libc.semget(key, 1, 0o1666)]
print("IPC", ipc)
for attempt in (lambda: open("/dev/shm/" + {token!r}, "w").write("x"),
                lambda: shared_memory.SharedMemory(name={token!r} + "m", create=True, size=64)):
    try:
        attempt()
    except OSError as e:
        print("SHM", e.errno)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.chdir(hide)
        os.closerange(0, 1024)
        time.sleep({delay})
        open(os.path.join(ws, "marker"), "w").write("I survived")
        os._exit(0)
    os._exit(0)
os.wait()
if os.fork() == 0:  # a plain background child in the program's own group
    os.chdir(hide)
    time.sleep({delay})
    open(os.path.join(ws, "marker2"), "w").write("I survived too")
    os._exit(0)
{tail}
"""


def _sysv_key(token: str) -> int:
    """The SysV key the daemon program uses: its own, so that no other process's objects
    (a PostgreSQL server a parallel test started uses SysV shared memory) count as a leak."""
    return int.from_bytes(hashlib.sha256(token.encode()).digest()[:4], "big") & 0x7FFFFFFF


def _sysv_with_key(key: int) -> list[str]:
    """The host's SysV objects (shm, msg, sem) whose key is ``key``, as their table lines."""
    found = []
    for kind in ("shm", "msg", "sem"):
        for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]:
            if line.split()[0] == str(key):
                found.append(f"{kind}: {line}")
    return found


def _procs_in(token: str) -> list[str]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if token in os.readlink(f"/proc/{entry.name}/cwd"):
                    found.append(entry.name)
            except OSError:
                continue
    return found


@pytest.mark.parametrize("who", ["root", "nobody"], indirect=True)
@pytest.mark.parametrize("ending", ["returns", "wall", "shell"])
def test_nothing_outlives_the_turn(layer: Isolation, who: str, place: Place, ending: str) -> None:
    before_shm = set(os.listdir("/dev/shm"))
    key = _sysv_key(place.token)
    wall = 2
    delay = wall + 1 if ending == "wall" else 1.5  # past the end of the turn either way
    tail = "while True: time.sleep(1)" if ending == "wall" else "print('done')"
    program = DAEMON.format(token=place.token, delay=delay, tail=tail, key=key)
    limits = Limits(wall_s=wall, cpu_s=3, processes=32)
    if ending == "shell":
        (place.workspace / "daemon.py").write_text(program)
        r = run(place, who, "python3 daemon.py && sleep 0.2", limits=limits, shell=True)
        assert r["exit"] == 0, r
    else:
        r = run(place, who, program, limits=limits)
        assert r["limit"] == ("wall" if ending == "wall" else None), r
    time.sleep(delay + 1.5 - (wall if ending == "wall" else 0))
    assert not (place.workspace / "marker").exists(), "a setsid double-fork daemon survived"
    assert not (place.workspace / "marker2").exists(), "a background child survived"
    assert _procs_in(place.token) == []
    assert _sysv_with_key(key) == [], "SysV IPC objects were left on the host"
    new_shm = set(os.listdir("/dev/shm")) - before_shm
    assert not [n for n in new_shm if place.token in n], new_shm
    assert_runs_normally(place, who)


# ------------------------------------------------------------------ disk fill

FILLS = {
    "many_files": "i = 0\nwhile True:\n    open(f'f{i}', 'w').close()\n    i += 1\n",
    "one_big_file": (
        "b = b'x' * (1 << 20)\nwith open('big', 'wb') as f:\n    while True:\n        f.write(b)\n"
    ),
    "many_dirs": "import os\ni = 0\nwhile True:\n    os.makedirs(f'd{i}/e/f')\n    i += 1\n",
    "many_big_files": (
        "b = b'y' * (1 << 20)\ni = 0\nwhile True:\n    with open(f'b{i}', 'wb') as f:\n"
        "        f.write(b * 4)\n    i += 1\n"
    ),
}


def _usage(path: Path) -> tuple[int, int]:
    total = count = 0
    for p in path.rglob("*"):
        st = p.lstat()
        total += st.st_blocks * 512
        count += 1
    return total, count


@pytest.mark.parametrize("who", ["root", "nobody"], indirect=True)
@pytest.mark.parametrize("fill", sorted(FILLS))
def test_a_disk_fill_turn_is_stopped(layer: Isolation, who: str, place: Place, fill: str) -> None:
    started = time.monotonic()
    r = run(place, who, FILLS[fill])
    seconds = time.monotonic() - started
    name = "write_files" if fill in ("many_files", "many_dirs") else "write_bytes"
    assert r["limit"] == name, r
    assert name in r["error"], r["error"]
    used, count = _usage(place.workspace)
    # at the cap or past it by what one 50 ms poll lets a writer add (a loaded machine
    # makes that window longer): a runaway bound, far below what the program would write
    if name == "write_bytes":
        assert LIMITS.write_bytes <= used < 10 * LIMITS.write_bytes, used
    else:
        assert LIMITS.write_files <= count < 10 * LIMITS.write_files, count
    assert seconds < LIMITS.wall_s, "stopped by the wall clock, not the write cap"
    assert_runs_normally(place, who)


def test_a_disk_fill_command_is_stopped(layer: Isolation, place: Place) -> None:
    who = "root" if os.geteuid() == 0 else "nobody"
    r = run(place, who, "i=0; while :; do : > f$i; i=$((i+1)); done", shell=True)
    assert r["limit"] == "write_files" and r["exit"] == -9, r
    assert "write_files cap" in r["output"]
    assert LIMITS.write_files <= _usage(place.workspace)[1] < 10 * LIMITS.write_files
    assert_runs_normally(place, who)


# ------------------------------------------------------------------ workspace ACLs


def _acl(path: Path) -> bytes | None:
    try:
        return os.getxattr(path, "system.posix_acl_access", follow_symlinks=False)
    except OSError as exc:
        assert exc.errno in (errno.ENODATA, errno.ENOTSUP), exc
        return None


@pytest.mark.skipif(os.geteuid() != 0, reason="gg shares the workspace only as root")
def test_share_workspace_follows_nothing_out(place: Place) -> None:
    ws, out = place.workspace, place.outside
    (out / "dir").mkdir()
    (out / "dir" / "inner.txt").write_text("outside")
    (out / "linked.txt").write_text("outside, hard linked")
    (out / "deep").mkdir()
    (ws / "own.txt").write_text("mine")
    (ws / "to_dir").symlink_to(out / "dir")
    (ws / "to_file").symlink_to(out / "dir" / "inner.txt")
    os.link(out / "linked.txt", ws / "hard.txt")
    os.mkfifo(ws / "fifo")
    nested = ws
    for _ in range(300):  # deeper than MAX_DEPTH: the walk must neither recurse nor fail
        nested = nested / "n"
        nested.mkdir()
    done = threading.Event()

    def share() -> None:
        share_workspace(ws, force=True)
        done.set()

    threading.Thread(target=share, daemon=True).start()
    assert done.wait(30), "share_workspace blocked (on the FIFO?)"
    assert _acl(ws / "own.txt") is not None
    assert _acl(ws / "n") is not None
    for outside in (out / "dir", out / "dir" / "inner.txt", out / "linked.txt", out):
        assert _acl(outside) is None, f"an ACL was set outside the workspace on {outside}"
    assert _acl(ws / "hard.txt") is None  # the same inode as linked.txt


# ------------------------------------------------------------ other processes' settings

OTHERS = r"""
import os, resource
me = os.getpid()
changed = []
for name in range(max(2, me - 5000), me + 50):  # /proc may be hidden: guess the pids
    if name == me:
        continue
    try:
        resource.prlimit(int(name), resource.RLIMIT_NOFILE, (3, 3))
        changed.append(("prlimit", name))
    except OSError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, int(name), 19)
        changed.append(("setpriority", name))
    except OSError:
        pass
resource.prlimit(0, resource.RLIMIT_NOFILE, (64, 64))  # its own: still allowed
os.setpriority(os.PRIO_PROCESS, 0, 5)
print("changed", changed)
"""


@pytest.mark.parametrize("who", ["root", "nobody"], indirect=True)
def test_a_program_cannot_change_another_process_limits(
    layer: Isolation, who: str, place: Place
) -> None:
    r = run(place, who, OTHERS)  # under rlimit as nobody, gg's driver shares the program's uid
    assert r["error"] is None, r
    assert "changed []" in r["output"], r["output"]
    assert_runs_normally(place, who)  # gg (the driver) kept its limits and runs on


# ------------------------------------------------------------------ compiled guest code


def test_no_program_can_swap_the_compiled_guest_code(
    layer: Isolation, who: str, place: Place
) -> None:
    """The run's ``boot.pyc`` (and the zygote's files) starts the next process before it is
    confined: as root's slot uid or as an unprivileged gg's own user, a program finds them
    and can neither write, rename nor add one."""
    r = run(place, who, GUEST_CODE_PROBE)
    line = [x for x in r["output"].splitlines() if x.startswith("GUEST ")]
    assert line, r
    report = json.loads(line[-1][len("GUEST ") :])
    assert report["seen"] and report["wrote"] == [], report
    assert_runs_normally(place, who)
