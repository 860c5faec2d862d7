"""Issue 9, Build items 2 and 5: hooks without keys, and config protection.

Real runs (``python -m gg run`` in a subprocess, so the fake key sits in gg's
initial environment, where ``/proc/<pid>/environ`` shows it), a scripted model,
the real sandbox. As root, and as uid 65534 where the layer differs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.guard import Snapshot, hook_scripts
from gg.testing import ScriptedModel, call
from nobody import as_nobody as nobody_argv

SRC = Path(__file__).resolve().parents[2] / "src"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny-calc"
KEY = "sk-gg-fake-9f1c2e7d4b"
ROOT = os.geteuid() == 0

# The agent's payload: runs when the hook imports it (conftest.py for pytest, a test
# module for unittest). It looks for the key everywhere it can, tries to write the
# workspace, and reports on stderr with exit 2 (so the report is the gate's reason).
PAYLOAD = textwrap.dedent(f'''
    import os, sys
    key = "{KEY[:10]}" + "{KEY[10:]}"
    found, readable, visible = [], [], []
    if any(key in v for v in os.environ.values()):
        found.append("env")
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        visible.append(int(pid))
        for name in ("environ", "cmdline", "mem"):
            try:
                with open(f"/proc/{{pid}}/{{name}}", "rb") as f:
                    data = f.read(1 << 20)
            except OSError:
                continue
            if name == "environ":
                readable.append(int(pid))
            if key.encode() in data:
                found.append(f"/proc/{{pid}}/{{name}}")
    seen = 0
    for top in ("/tmp", "/root", "/home", "/var/tmp", "/work", os.getcwd()):
        for dirpath, dirs, files in os.walk(top):
            if dirpath.count("/") - top.count("/") >= 4 or seen > 4000:
                dirs[:] = []
            for name in files:
                seen += 1
                try:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        if key.encode() in f.read(1 << 20):
                            found.append(os.path.join(dirpath, name))
                except OSError:
                    pass
    try:
        with open("pwned.txt", "w") as f:
            f.write("x")
        wrote = True
    except OSError:
        wrote = False
    report = {{"found": found, "readable": readable, "visible": visible, "wrote": wrote,
              "uid": os.getuid(), "files": seen}}
    text = ("PROBE " + __import__("json").dumps(report) + "\\n").encode()
    try:  # pytest captures fd 2 while it imports conftest.py: write to the shell's stderr
        fd = os.open(f"/proc/{{os.getppid()}}/fd/2", os.O_WRONLY | os.O_APPEND)
    except OSError:
        fd = 2
    os.write(fd, text)
    os._exit(2)
''')

BROKEN_TEST = "def test_it():\n    assert 1 + 1 == 3\n"
BROKEN_UNITTEST = (
    "import unittest\n\nclass T(unittest.TestCase):\n"
    "    def test_it(self):\n        self.assertEqual(1 + 1, 3)\n"
)


def _toml(layer: str, hook: str, *, extra: str = "", gate_blocks: int = 2) -> str:
    return (
        f'[sandbox]\nisolation = "{layer}"\n[ceilings]\ngate_blocks = {gate_blocks}\n'
        f"{extra}[[hooks.agent_stop]]\ncommand = {json.dumps(hook)}\ntimeout_s = 90\n"
    )


def _replies(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"replies": [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls]}


def _run_gg(
    ws: Path,
    replies: dict[str, Any],
    *,
    as_nobody: bool = False,
    state: Path | None = None,
    args: tuple[str, ...] = (),
) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    """``python -m gg run --json`` with the fake key in its initial environment."""
    script = ws.parent / f"replies-{len(list(ws.parent.iterdir()))}.json"
    script.write_text(json.dumps(replies))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {"OPENAI_API_KEY": KEY, "PYTHONPATH": str(SRC)}
    if state is not None:
        env["GG_STATE_HOME"] = str(state)
    argv = [
        sys.executable,
        "-m",
        "gg",
        "run",
        "do the task",
        "-w",
        str(ws),
        "--model",
        f"scripted:{script}",
        "--json",
        *args,
    ]
    if as_nobody:
        os.chown(script, 65534, 65534)
        argv = nobody_argv(argv)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd="/")
    assert done.stdout.strip(), done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    events = [json.loads(line) for line in Path(result["stream"]).read_text().splitlines()]
    return result, done.stderr, events


@pytest.fixture
def open_ws() -> Iterator[Path]:
    """A workspace under a world-searchable temp dir (uid 65534 can own and reach it)."""
    top = Path(tempfile.mkdtemp(prefix="gg-hooks-", dir="/tmp"))
    top.chmod(0o755)
    ws = top / "ws"
    ws.mkdir()
    yield ws
    shutil.rmtree(top, ignore_errors=True)


def _probe(events: list[dict[str, Any]]) -> dict[str, Any]:
    reasons = [e["reason"] for e in events if e["type"] == "gate_blocked"]
    assert reasons, [e["type"] for e in events]
    line = next((ln for r in reasons for ln in r.splitlines() if ln.startswith("PROBE ")), None)
    assert line is not None, reasons  # the planted code did run in the hook
    report: dict[str, Any] = json.loads(line.removeprefix("PROBE "))
    return report


def _gg_pid(events: list[dict[str, Any]]) -> int:
    return int(next(e for e in events if e["type"] == "run_started")["pid"])


def _attack_workspace(ws: Path, layer: str, runner: str) -> tuple[str, dict[str, Any]]:
    """Set up a failing test and a hook; return the payload's file name and the replies."""
    if runner == "pytest":
        (ws / "test_it.py").write_text(BROKEN_TEST)
        hook, payload = "python -m pytest -q -p no:cacheprovider", "conftest.py"
    else:
        (ws / "test_it.py").write_text(BROKEN_UNITTEST)
        hook, payload = "python3 -m unittest -q", "test_zz_probe.py"
    (ws / "gg.toml").write_text(_toml(layer, hook))
    replies = _replies(
        ("write_file", {"path": payload, "content": PAYLOAD}),
        ("finish", {"summary": "tests pass"}),
        ("list_dir", {}),
        ("finish", {"summary": "tests pass now"}),
    )
    return payload, replies


def _assert_attack_failed(
    ws: Path, result: dict[str, Any], events: list[dict[str, Any]], *, pid_visible: bool
) -> dict[str, Any]:
    report = _probe(events)
    pid = _gg_pid(events)
    assert report["found"] == [], report
    assert pid not in report["readable"], report
    if pid_visible:  # the layer shows gg's pid: only non-dumpability keeps environ closed
        assert pid in report["visible"], report
    assert report["wrote"] is False and not (ws / "pwned.txt").exists()
    assert KEY not in json.dumps(events)
    # gg kept going: the next turn ran normally, the gate blocked again, the run stopped
    results = [e for e in events if e["type"] == "tool_result"]
    assert any(e["name"] == "list_dir" and e["ok"] for e in results)
    assert result["status"] == "stopped" and "gate" in (result["diagnosis"] or "")
    return report


@pytest.mark.skipif(not ROOT, reason="the root layers (dedicated uid) need root")
@pytest.mark.parametrize(
    ("layer", "runner"), [("bwrap", "pytest"), ("unshare", "unittest"), ("rlimit", "unittest")]
)
def test_planted_test_code_cannot_read_the_keys_as_root(
    open_ws: Path,
    layer: str,
    runner: str,
) -> None:
    _, replies = _attack_workspace(open_ws, layer, runner)
    result, _, events = _run_gg(open_ws, replies)
    report = _assert_attack_failed(open_ws, result, events, pid_visible=layer == "rlimit")
    assert report["uid"] != 0  # the sandbox uid, not root


@pytest.mark.skipif(
    not ROOT or not shutil.which("setpriv") or not shutil.which("unshare"),
    reason="needs root to become uid 65534 in a private mount namespace",
)
@pytest.mark.parametrize("layer", ["bwrap", "rlimit"])
def test_planted_conftest_cannot_read_the_keys_as_non_root(open_ws: Path, layer: str) -> None:
    _, replies = _attack_workspace(open_ws, layer, "pytest")
    state = open_ws.parent / "state"
    state.mkdir(mode=0o700)
    for path in (open_ws, state, *open_ws.iterdir()):
        os.chown(path, 65534, 65534)
    result, _, events = _run_gg(open_ws, replies, as_nobody=True, state=state)
    report = _assert_attack_failed(open_ws, result, events, pid_visible=layer == "rlimit")
    assert report["uid"] == 65534  # gg's own uid: the same uid as gg, still no keys


@pytest.mark.skipif(not ROOT, reason="uses the dedicated sandbox uid")
@pytest.mark.parametrize("layer", ["bwrap", "rlimit"])
def test_rewritten_gg_toml_has_no_effect_and_the_next_run_warns(
    open_ws: Path,
    layer: str,
) -> None:
    hook = 'test "$(id -u)" != 0'  # passes in the sandbox; a planted hook would block
    original = _toml(layer, hook)
    (open_ws / "gg.toml").write_text(original)
    planted = (
        '[sandbox]\ncommands = "host"\n[[hooks.agent_stop]]\n'
        'command = "echo planted >&2; exit 2"\ntrusted = true\n'
    )
    replies = _replies(
        ("run_command", {"command": f"printf %b {json.dumps(planted)} > gg.toml; echo rc=$?"}),
        ("write_file", {"path": "gg.toml", "content": planted}),  # host-side: refused
        ("write_file", {"path": "./sub/../gg.toml", "content": planted}),  # an alias: refused
        ("run_command", {"command": "id -u"}),
        ("finish", {"summary": "done"}),
    )
    result, stderr, events = _run_gg(open_ws, replies)
    results = [e for e in events if e["type"] == "tool_result"]
    assert not results[1]["ok"] and "gg's own configuration" in results[1]["excerpt"]
    assert not results[2]["ok"], results[2]
    if layer == "bwrap":  # the program's own write fails too: gg.toml is bound read-only
        assert "Read-only file system" in results[0]["excerpt"], results[0]
        assert (open_ws / "gg.toml").read_text() == original
    else:  # Landlock cannot carve one file out of the workspace: the shell's write lands ...
        assert (open_ws / "gg.toml").read_text() == planted
    # ... with no effect on this run: run_command stayed in the sandbox, no planted hook
    assert results[3]["excerpt"].split()[-1] != "0", results[3]
    assert result["status"] == "ended", result
    assert not any(e["type"] == "gate_blocked" for e in events)
    started = next(e for e in events if e["type"] == "run_started")
    assert started["commands"] == "sandbox" and started["config_changed"] == []
    if layer == "bwrap":
        return
    # the next run refuses the weakening settings (gg.trust) until the operator confirms ...
    with pytest.raises(gg.ConfigError, match='commands = "host"'):
        gg.Agent(workspace=open_ws, model=ScriptedModel([call("finish", summary="x")])).run("t")
    # ... and, confirmed, warns naming the file and says plainly commands run on the host
    result2, stderr2, events2 = _run_gg(
        open_ws, _replies(("finish", {"summary": "ok"})), args=("--trust-config",)
    )
    assert "gg.toml" in stderr2 and "changed since" in stderr2
    started2 = next(e for e in events2 if e["type"] == "run_started")
    assert started2["config_changed"] == ["gg.toml"] and started2["commands"] == "host"
    _, stderr3, events3 = _run_gg(open_ws, _replies(("finish", {"summary": "ok"})))
    assert next(e for e in events3 if e["type"] == "run_started")["config_changed"] == []
    assert "changed since" not in stderr3


@pytest.mark.parametrize("layer", ["bwrap", "unshare", "rlimit"])
def test_hook_script_rewritten_mid_run_is_not_run(open_ws: Path, layer: str) -> None:
    scripts = open_ws / "scripts"
    scripts.mkdir()
    (scripts / "check.sh").write_text("exit 2\n")  # always blocks, as written by the operator
    (open_ws / "gg.toml").write_text(_toml(layer, "sh ./scripts/check.sh"))
    evil = "exit 0\n"
    replies = _replies(
        ("run_command", {"command": f"echo '{evil.strip()}' > scripts/check.sh; echo rc=$?"}),
        (
            "run_command",
            {
                "command": "mv scripts s2 && mkdir scripts && "
                f"echo '{evil.strip()}' > scripts/check.sh; echo rc=$?"
            },
        ),
        ("write_file", {"path": "scripts/check.sh", "content": evil}),
        ("finish", {"summary": "done"}),
        ("list_dir", {}),
        ("finish", {"summary": "done"}),
    )
    result, _, events = _run_gg(open_ws, replies)
    results = [e for e in events if e["type"] == "tool_result"]
    assert not results[2]["ok"] and "gg's own configuration" in results[2]["excerpt"]
    blocks = [e for e in events if e["type"] == "gate_blocked"]
    assert len(blocks) == 2
    assert any(e["name"] == "list_dir" and e["ok"] for e in results)  # gg kept going
    assert result["status"] == "stopped"
    if layer == "bwrap":  # every write and move failed: the operator's hook ran, unchanged
        assert "Read-only file system" in results[0]["excerpt"], results[0]
        assert "Device or resource busy" in results[1]["excerpt"], results[1]
        assert (scripts / "check.sh").read_text() == "exit 2\n"
        assert all(not b["failed"] for b in blocks)  # it blocked as written: exit 2
        return
    for block in blocks:  # the moves landed: gg refused to run the changed script
        assert "scripts/check.sh" in block["reason"] and "was not run" in block["reason"]
        assert block["failed"] is True
    assert "scripts/check.sh" in result["diagnosis"] and "broken" in result["diagnosis"]


@pytest.mark.skipif(not ROOT, reason="the sandboxed hook must run as another uid than gg")
def test_trusted_hook_runs_on_the_host_still_without_keys(open_ws: Path) -> None:
    out = Path(tempfile.mkdtemp(prefix="gg-outside-"))  # 0700, root's, outside the workspace
    try:
        probe = (
            f"env > {out}/env-$GG_WHO; cat /proc/$PPID/environ > {out}/environ-$GG_WHO "
            f"2>/dev/null; touch {out}/touched-$GG_WHO; true"
        )
        toml = _toml("bwrap", f"GG_WHO=sandboxed; {probe}")
        toml += (
            f"[[hooks.agent_stop]]\ncommand = {json.dumps(f'GG_WHO=trusted; {probe}')}\n"
            "trusted = true\n"
        )
        (open_ws / "gg.toml").write_text(toml)
        result, _, events = _run_gg(open_ws, _replies(("finish", {"summary": "done"})))
        assert result["status"] == "ended", result
        assert (out / "touched-trusted").exists()  # on the host: it wrote outside the ws
        assert not (out / "touched-sandboxed").exists()  # the sandboxed one cannot
        env = (out / "env-trusted").read_text()
        assert "PATH=" in env and KEY not in env and "OPENAI_API_KEY" not in env
        environ = out / "environ-trusted"  # $PPID is gg: non-dumpable, no CAP_SYS_PTRACE
        assert not environ.exists() or KEY not in environ.read_text(errors="replace")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_tiny_calc_example_hook_blocks_then_passes_in_the_sandbox(tmp_path: Path) -> None:
    ws = tmp_path / "tiny-calc"
    shutil.copytree(EXAMPLE, ws)
    fixed = (
        (ws / "calc.py")
        .read_text()
        .replace("    return a / b", "    return None if b == 0 else a / b")
    )
    model = ScriptedModel(
        [
            call("finish", summary="done"),
            call("write_file", path="calc.py", content=fixed),
            call("finish", summary="fixed divide"),
        ]
    )
    agent = gg.Agent(model=model, workspace=ws)
    result = agent.run("fix the tests")
    events = [json.loads(line) for line in result.stream.read_text().splitlines()]
    blocks = [e for e in events if e["type"] == "gate_blocked"]
    assert len(blocks) == 1 and "test_divide_by_zero_is_none" in blocks[0]["reason"]
    assert blocks[0]["failed"] is False
    assert result.ending == gg.Finish(summary="fixed divide")
    assert not (ws / "__pycache__").exists()  # read-only, and no bytecode was written


def test_hook_scripts_are_the_files_the_command_names(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "check.sh").write_text("exit 0\n")
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "gate.py").write_text("pass\n")
    (tmp_path / "hooks" / "link.py").symlink_to("/etc/hostname")
    ws = tmp_path.resolve()
    assert hook_scripts("./scripts/check.sh --fast", ws) == ("scripts/check.sh",)
    assert hook_scripts("python3 hooks/gate.py && sh -c './scripts/check.sh x'", ws) == (
        "hooks/gate.py",
        "scripts/check.sh",
    )
    assert hook_scripts("python -m pytest -q", ws) == ()
    assert hook_scripts("python3 hooks/link.py --out=../x", ws) == ()  # a symlink: not a file
    snap = Snapshot.take(ws, configs=["gg.toml"], commands=["sh ./scripts/check.sh"])
    assert snap.tampered("sh ./scripts/check.sh") == []
    (tmp_path / "scripts" / "check.sh").write_text("exit 1\n")
    assert snap.tampered("sh ./scripts/check.sh") == ["'scripts/check.sh' changed during this run"]
    (tmp_path / "scripts" / "check.sh").unlink()
    (tmp_path / "scripts" / "check.sh").symlink_to("/bin/true")
    assert "removed or replaced" in snap.tampered("sh ./scripts/check.sh")[0]
    late = Snapshot.take(ws, configs=[], commands=["sh ./late.sh"])
    (tmp_path / "late.sh").write_text("exit 0\n")
    assert late.tampered("sh ./late.sh") == ["'late.sh' appeared during this run"]


@pytest.mark.skipif(
    not ROOT or not shutil.which("setpriv") or not shutil.which("unshare"),
    reason="needs root to become uid 65534 in a private mount namespace",
)
def test_non_root_trusted_hook_cannot_read_gg_environ(open_ws: Path) -> None:
    # Same uid as gg, on the host, no Landlock, no namespace: only gg being non-dumpable
    # keeps /proc/<gg pid>/environ closed. $PPID is gg (the control: its cmdline says so).
    hook = (
        f"tr '\\0' ' ' < /proc/$PPID/cmdline >&2; echo >&2; "
        f"if tr '\\0' '\\n' < /proc/$PPID/environ | grep -q {KEY}; then echo LEAKED >&2; "
        "else echo SAFE >&2; fi; exit 2"
    )
    (open_ws / "gg.toml").write_text(
        f"[ceilings]\ngate_blocks = 1\n[[hooks.agent_stop]]\ncommand = {json.dumps(hook)}\n"
        "trusted = true\n"
    )
    state = open_ws.parent / "state"
    state.mkdir(mode=0o700)
    for path in (open_ws, state, *open_ws.iterdir()):
        os.chown(path, 65534, 65534)
    _, _, events = _run_gg(
        open_ws, _replies(("finish", {"summary": "done"})), as_nobody=True, state=state
    )
    reason = next(e for e in events if e["type"] == "gate_blocked")["reason"]
    assert "-m gg run" in reason, reason  # the hook looked at gg itself
    assert "SAFE" in reason and "LEAKED" not in reason and KEY not in reason, reason
