"""Adversary finding F8: what a sandboxed program or shell command sees of other processes.

A host process started by the test carries a secret on its command line
(``--token=...``). Under bwrap and unshare the sandbox has its own pid
namespace and a procfs of its own on ``/proc``: neither listing ``/proc`` nor
guessing the host pid reaches that process, for programs and shell commands,
as root and as an unprivileged user. Under rlimit (no namespaces) programs
are kept out of ``/proc`` by Landlock, and shell commands see every host
process's command line: the documented exposure, asserted here so that the
docs stay true. In every layer a real ``gg run`` started with a provider key
in its environment leaks the key through no ``/proc`` entry (gg is
non-dumpable and puts no secret on its command line).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_isolation_gaps as gaps
from test_isolation_gaps import NOBODY, SYSTEM_PYTHON, Place, run

import gg
from gg.sandbox import Isolation
from gg.sandbox.host import host_facts
from nobody import as_nobody

place = gaps.place  # fixtures: a world-searchable root with a workspace, and the driving user
who = gaps.who

PROBE = r"""
import json, os
p = json.load(open("params.json"))
out = {"pid": os.getpid()}
try:
    out["listed"] = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
except OSError as exc:
    out["listed"] = "errno " + str(exc.errno)
def scan(name, secret):
    hits = []
    for pid in out["listed"] if isinstance(out["listed"], list) else []:
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                if secret.encode() in f.read():
                    hits.append(pid)
        except OSError:
            pass
    return hits
out["cmdline_hits"] = scan("cmdline", p["secret"])
out["environ_hits"] = scan("environ", p["secret"])
for pid in p["guess"]:
    for name in ("cmdline", "status", "environ"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                data = f.read()
            out[f"{pid}/{name}"] = "secret" if p["secret"].encode() in data else "read"
        except OSError as exc:
            out[f"{pid}/{name}"] = "errno " + str(exc.errno)
try:
    with open("/proc/self/status") as f:
        out["self"] = [line.split()[1] for line in f if line.startswith("Pid:")][0]
except OSError as exc:
    out["self"] = "errno " + str(exc.errno)
print("PROBE " + json.dumps(out))
"""
"""Reads ``params.json`` (the secret and the pids to guess) from the workspace and prints
``PROBE {json}``. The secret never appears on the probe's own command line."""

_ENOENT, _EACCES = f"errno {2}", f"errno {13}"


@pytest.fixture
def secret() -> str:
    return "tok" + secrets.token_hex(12)


@pytest.fixture
def host_process(secret: str, who: str) -> Iterator[int]:
    """A host process of the sandbox driver's user (dumpable), with ``--token=<secret>`` on
    its command line and ``TOKEN=<secret>`` in its environment; its pid."""
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    proc = subprocess.Popen(
        [*(drop if who == "nobody" else []), SYSTEM_PYTHON, "-c", "import time; time.sleep(300)",
         f"--token={secret}"], env={"TOKEN": secret},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _probe(output: str) -> dict[str, Any]:
    lines = [x for x in output.splitlines() if x.startswith("PROBE ")]
    assert lines, f"the probe did not report:\n{output}"
    result: dict[str, Any] = json.loads(lines[-1][6:])
    return result


def _proc_mounts() -> int:
    with open("/proc/self/mountinfo") as f:
        return sum(1 for line in f if " - proc " in line)


def _write_probe(workspace: Path, secret: str, guess: list[int | str]) -> None:
    (workspace / "probe.py").write_text(PROBE)
    (workspace / "params.json").write_text(json.dumps({"secret": secret, "guess": guess}))


@pytest.mark.parametrize("who", ["root", "nobody"], indirect=True)
@pytest.mark.parametrize("kind", ["program", "shell"])
def test_host_processes_are_out_of_sight(
    layer: Isolation, who: str, kind: str, place: Place, secret: str, host_process: int
) -> None:
    """bwrap, unshare: no host process by listing or by pid; rlimit: what the docs say."""
    mounts = _proc_mounts()
    _write_probe(place.workspace, secret, [host_process])
    if kind == "shell":
        r = run(place, who, "python3 probe.py", shell=True)
    else:
        r = run(place, who, PROBE)
    assert r["error"] is None and r["limit"] is None, r
    seen = _probe(r["output"])
    assert _proc_mounts() == mounts  # the sandbox's procfs never shows up on the host
    assert secret not in r["output"]  # the probe reports pids, never the text it found
    if layer is Isolation.RLIMIT:
        _assert_rlimit_view(seen, kind, host_process)
        return
    assert seen["cmdline_hits"] == [] and seen["environ_hits"] == []
    for name in ("cmdline", "status", "environ"):
        assert seen[f"{host_process}/{name}"] == _ENOENT, seen  # no such pid in here
    assert seen["pid"] < 10, seen  # a pid of the sandbox's own namespace
    if kind == "shell" or layer is Isolation.BWRAP:  # /proc is readable, and it is private
        assert isinstance(seen["listed"], list) and seen["listed"], seen
        assert max(seen["listed"]) < 20 and host_process not in seen["listed"], seen
        assert seen["self"] == str(seen["pid"]), seen
    else:  # unshare programs: Landlock keeps them out of /proc altogether
        assert seen["listed"] == _EACCES, seen


def _assert_rlimit_view(seen: dict[str, Any], kind: str, host_process: int) -> None:
    """rlimit: programs are kept out of /proc by Landlock; shell commands see the host."""
    if kind == "program":
        if host_facts().landlock_abi < 1:
            pytest.skip("without Landlock an rlimit program sees the host's /proc")
        assert seen["listed"] == _EACCES and seen["cmdline_hits"] == [], seen
        assert seen[f"{host_process}/cmdline"] == _EACCES, seen
        return
    # The documented exposure: no pid namespace, so the host's /proc and every
    # process's command line are visible. Its environment is not, even for a process of
    # the sandbox's own uid: Landlock denies ptrace-mode access to processes outside it.
    assert host_process in seen["listed"] and seen["cmdline_hits"] == [host_process], seen
    assert seen[f"{host_process}/cmdline"] == "secret", seen
    assert seen[f"{host_process}/status"] == "read", seen
    if host_facts().landlock_abi >= 1:
        assert seen[f"{host_process}/environ"] == _EACCES and seen["environ_hits"] == [], seen


# ------------------------------------------------------------------ gg itself


def _gg_env(place: Place, who: str, key: str) -> tuple[list[str], dict[str, str]]:
    state = place.root / "state"
    state.mkdir(mode=0o700)
    src = str(Path(gg.__file__).resolve().parents[1])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(state), "LANG": "C.UTF-8",
           "GG_SANDBOX": os.environ["GG_SANDBOX"], "GG_STATE_HOME": str(state),
           "OPENAI_API_KEY": key, "ANTHROPIC_API_KEY": key,
           "PYTHONPATH": f"{src}:{sysconfig.get_paths()['purelib']}"}  # fmt: skip
    if who == "root":
        return [sys.executable], env
    for path in (place.workspace, *place.workspace.rglob("*"), state):
        os.lchown(path, NOBODY, NOBODY)
    return as_nobody([SYSTEM_PYTHON]), env  # execs all the way: gg keeps the first pid


@pytest.mark.parametrize("who", ["root", "nobody"], indirect=True)
def test_gg_leaks_no_key_through_proc(layer: Isolation, who: str, place: Place) -> None:
    """A real ``gg run`` with a provider key in its environment: a sandboxed command that
    reads every ``/proc/<pid>/cmdline`` and ``environ`` it can finds the key nowhere."""
    key = "sk-" + secrets.token_hex(16)
    script = place.root / "script.json"
    calls = [{"name": "run_command", "arguments": {"command": "python3 probe.py > seen.txt"}},
             {"name": "finish", "arguments": {"summary": "done"}}]  # fmt: skip
    script.write_text(json.dumps({"replies": [{"tool_calls": [c]} for c in calls]}))
    os.chmod(script, 0o644)
    python, env = _gg_env(place, who, key)
    command = [*python, "-m", "gg", "run", "look around", "-w", str(place.workspace),
               "--model", f"scripted:{script}"]  # fmt: skip
    proc = subprocess.Popen(  # sh waits for the probe's parameters, then execs gg (same pid)
        ["/bin/sh", "-c", 'read go && exec "$@"', "sh", *command], env=env, cwd="/",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    _write_probe(place.workspace, key, [proc.pid, "self"])
    if who == "nobody":
        os.lchown(place.workspace / "params.json", NOBODY, NOBODY)
    out, _ = proc.communicate("go\n", timeout=120)
    assert proc.returncode == 0 and "done" in out, out
    seen = _probe((place.workspace / "seen.txt").read_text())
    assert key not in out
    assert seen["cmdline_hits"] == [] and seen["environ_hits"] == [], seen
    assert seen[f"{proc.pid}/environ"] != "secret", seen
    if layer is Isolation.RLIMIT:  # gg is in sight there: its cmdline, never its environ
        assert seen[f"{proc.pid}/cmdline"] == "read", seen
        assert seen[f"{proc.pid}/environ"] == _EACCES, seen
    else:
        assert seen[f"{proc.pid}/cmdline"] == _ENOENT, seen
    assert re.fullmatch(r"\d+", seen["self"]), seen  # the command could read its own /proc
    assert seen["self/environ"] == "read", seen  # ... environ included: the scan is not blind
