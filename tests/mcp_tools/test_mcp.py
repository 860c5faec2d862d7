"""MCP servers as registry tools (SPEC T1, issue 13 item 1), against real servers.

The servers are real (``mcp_server.py``, written with the mcp SDK's server API): one
on stdio, started by gg per run in the run's sandbox (or on the host), and one on
streamable HTTP on 127.0.0.1 that the test starts. The scripted model drives real
sessions in tool-calling mode and in code mode (Python and JavaScript).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

import gg
from gg.errors import ConfigError
from gg.mcp.tool import _without_patterns, check_schema
from gg.models.base import ToolMessage
from gg.stream import ToolResult, read_events
from gg.testing import ScriptedModel, call

SERVER = Path(__file__).with_name("mcp_server.py")


def _stdio(name: str = "t", *, marker: str = "", extra: str = "") -> str:
    args = json.dumps([str(SERVER), "stdio", *([marker] if marker else [])])
    return (
        f'[[tools.mcp]]\nname = "{name}"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = {args}\n{extra}\n"
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def _told(model: ScriptedModel, turn: int) -> str:
    return [m for m in model.calls[turn][0] if isinstance(m, ToolMessage)][-1].content


def _agent(ws: Path, toml: str, model: ScriptedModel, **kw: object) -> gg.Agent:
    (ws / "gg.toml").write_text(toml)
    return gg.Agent(model=model, workspace=ws, **kw)  # type: ignore[arg-type]


def _alive(marker: str) -> list[int]:
    """Pids whose command line holds ``marker`` (the test's server processes)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                out.append(int(entry))
    return out


def test_stdio_tools_in_tool_calling_mode_run_sandboxed(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GG_MCP_TOKEN", "passed-on")
    monkeypatch.setenv("GG_MCP_SECRET", "kept-back")
    marker = f"gg-mcp-test-{secrets.token_hex(4)}"
    outside = tmp_path / "outside.txt"
    model = ScriptedModel(
        [
            call("mcp__t__add", a=2, b=40),
            call("mcp__t__echo_text", text="hi there"),
            call("mcp__t__where"),
            call("mcp__t__write_note", name="note.txt", text="from the server"),
            call("mcp__t__write_note", name=str(outside), text="escape"),
            call("mcp__t__add", a="two", b=1),
            call("finish", summary="done"),
        ]
    )
    agent = _agent(ws, _stdio(marker=marker, extra='pass_env = ["GG_MCP_TOKEN"]'), model)
    result = agent.run("use the server")
    assert result.status == "ended", result.diagnosis
    offered = model.calls[0][1]
    assert {"mcp__t__add", "mcp__t__echo_text", "mcp__t__hang", "read_file"} <= set(offered)
    assert _told(model, 1) == "42"
    assert _told(model, 2) == "echo: hi there"
    where = _told(model, 3)
    assert f"cwd={ws}" in where and "secret=<unset>" in where  # only pass_env is passed
    assert "token=[redacted]" in where and "passed-on" not in where  # and output is redacted
    assert (ws / "note.txt").read_text() == "from the server"
    assert not outside.exists()  # the sandbox: the workspace is the one writable place
    bad = _told(model, 6)
    assert "bad arguments for tool 'mcp__t__add'" in bad and "'a'" in bad
    assert not _alive(marker)  # the run's end stopped the server


def test_code_mode_calls_mcp_tools_in_python_and_javascript(ws: Path) -> None:
    programs = {
        "python": (
            "print('sum', gg.tools.mcp__t__add(a=20, b=22))\n"
            "print(gg.tools.mcp__t__echo_text(text='from python'))\n"
            "gg.session.finish('ok')\n"
        ),
        "javascript": (
            "console.log('sum', await gg.tools.mcpTAdd({a: 20, b: 22}));\n"
            "console.log(await gg.tools.mcpTEchoText({text: 'from javascript'}));\n"
            "await gg.session.finish('ok');\n"
        ),
    }
    for language, program in programs.items():
        model = ScriptedModel([call("submit_program", program=program)])
        agent = _agent(ws, _stdio(), model, mode="code", language=language)
        result = agent.run("add")
        assert result.status == "ended", (language, result.diagnosis)
        shown = json.dumps([e.model_dump(mode="json") for e in read_events(result.stream)])
        assert "sum 42" in shown and f"echo: from {language}" in shown, language


@pytest.fixture
def http_server() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def test_streamable_http_server_tools(
    ws: Path, http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GG_MCP_TOKEN", "sekrit-header-value")
    toml = (
        f'[[tools.mcp]]\nname = "web"\nurl = "{http_server}"\n'
        'headers = { "X-Token" = "Bearer ${GG_MCP_TOKEN}" }\n'
    )
    model = ScriptedModel(
        [
            call("mcp__web__add", a=1, b=2),
            call("mcp__web__fail", reason="over http"),
            call("finish", summary="d"),
        ]
    )
    result = _agent(ws, toml, model).run("t")
    assert result.status == "ended", result.diagnosis
    assert _told(model, 1) == "3"
    assert "tool 'fail' returned an error" in _told(model, 2)
    assert "refused: over http" in _told(model, 2)


def test_a_header_variable_that_is_not_set_is_a_config_error(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GG_MCP_NOPE", raising=False)
    toml = '[[tools.mcp]]\nname = "web"\nurl = "http://127.0.0.1:9/mcp"\n'
    toml += 'headers = { "Authorization" = "Bearer ${GG_MCP_NOPE}" }\n'
    with pytest.raises(ConfigError, match="GG_MCP_NOPE"):
        _agent(ws, toml, ScriptedModel([call("finish", summary="d")])).run("t")


def test_crash_hang_and_error_are_tool_errors_the_session_survives(ws: Path) -> None:
    model = ScriptedModel(
        [
            call("mcp__t__fail", reason="no way"),
            call("mcp__t__hang"),
            call("mcp__t__add", a=1, b=1),  # the server still serves after a hung call
            call("mcp__t__crash"),
            call("mcp__t__add", a=1, b=1),
            call("finish", summary="survived"),
        ]
    )
    toml = _stdio(extra="timeout_s = 2")
    started = time.monotonic()
    result = _agent(ws, toml, model, ceilings={"consecutive_errors": 10}).run("t")
    assert result.status == "ended", result.diagnosis
    assert time.monotonic() - started < 60
    assert "tool 'fail' returned an error" in _told(model, 1)
    assert "refused: no way" in _told(model, 1)
    assert "did not answer the call to 'hang' within 2 s" in _told(model, 2)
    assert _told(model, 3) == "2"
    crashed = _told(model, 4)
    assert "exited with status 7" in crashed and "about to crash" in crashed, crashed
    assert "is not running" in _told(model, 5)
    results = [e for e in read_events(result.stream) if isinstance(e, ToolResult)]
    assert [r.ok for r in results][:5] == [False, False, True, False, False]


def test_a_toolset_arm_selects_mcp_tools(ws: Path) -> None:
    toml = _stdio() + (
        '[tools]\narm = "narrow"\n'
        '[tools.arms.narrow]\ncapabilities = ["files", "mcp:t"]\n'
        'withhold = ["mcp__t__crash", "mcp__t__hang", "write_file"]\n'
    )
    model = ScriptedModel([call("mcp__t__crash"), call("finish", summary="d")])
    result = _agent(ws, toml, model).run("t")
    assert result.status == "ended", result.diagnosis
    offered = set(model.calls[0][1])
    assert {"mcp__t__add", "mcp__t__fail", "read_file"} <= offered
    assert not offered & {"mcp__t__crash", "mcp__t__hang", "write_file", "run_command"}
    assert "mcp__t__crash" in _told(model, 1) and "add" in _told(model, 1)


def test_an_arm_without_the_capability_offers_no_mcp_tool(ws: Path) -> None:
    toml = _stdio() + '[tools]\narm = "plain"\n[tools.arms.plain]\ncapabilities = ["files"]\n'
    toml += '[[tools.mcp]]\nname = "broken"\ncommand = "/nonexistent/server"\n'
    model = ScriptedModel([call("finish", summary="d")])
    assert _agent(ws, toml, model).run("t").status == "ended"  # broken: never started
    assert not [n for n in model.calls[0][1] if n.startswith("mcp__")]


@pytest.mark.parametrize("access", ["read", "write"])
def test_reviewers_get_mcp_tools_the_operator_marks_read(ws: Path, access: str) -> None:
    model = ScriptedModel([call("approve", comments="fine")])
    toml = _stdio(extra=f'access = "{access}"')
    assert _agent(ws, toml, model, role="review").run("review").status == "ended"
    assert ("mcp__t__add" in model.calls[0][1]) is (access == "read")


def test_junk_on_a_servers_stdout_is_dropped(ws: Path) -> None:
    line = f"echo this is not json-rpc; exec {sys.executable} {SERVER} stdio"
    toml = (
        '[[tools.mcp]]\nname = "t"\ncommand = "/bin/sh"\n'
        f"args = {json.dumps(['-c', line])}\nsandboxed = false\n"
    )
    model = ScriptedModel([call("mcp__t__add", a=2, b=2), call("finish", summary="d")])
    assert _agent(ws, toml, model).run("t").status == "ended"
    assert _told(model, 1) == "4"


def test_an_arm_offering_a_tool_no_server_lists_is_a_config_error(ws: Path) -> None:
    toml = _stdio() + '[tools]\narm = "a"\n[tools.arms.a]\noffer = ["mcp__t__nope"]\n'
    with pytest.raises(gg.UserError, match="mcp__t__nope"):
        _agent(ws, toml, ScriptedModel([call("finish", summary="d")])).run("t")


def test_a_pre_tool_hook_denies_an_mcp_tool(ws: Path) -> None:
    toml = _stdio() + (
        '[[hooks.pre_tool]]\nmatcher = "mcp__t__write.*"\n'  # a Claude Code style matcher'
        'command = "echo the server may not write >&2; exit 2"\n'
    )
    model = ScriptedModel(
        [call("mcp__t__write_note", name="x.txt", text="no"), call("finish", summary="d")]
    )
    assert _agent(ws, toml, model).run("t").status == "ended"
    assert "the server may not write" in _told(model, 1)
    assert not (ws / "x.txt").exists()


@pytest.mark.parametrize(
    ("toml", "why"),
    [
        (
            '[[tools.mcp]]\nname = "t"\ncommand = "/nonexistent/mcp-server"\n',
            "status 127",
        ),
        (
            f'[[tools.mcp]]\nname = "t"\ncommand = {json.dumps(sys.executable)}\n'
            'args = ["-c", "import sys; print(\'bad config\', file=sys.stderr); sys.exit(3)"]\n',
            "exited with status 3; its stderr ends: bad config",
        ),
        (
            f'[[tools.mcp]]\nname = "t"\ncommand = {json.dumps(sys.executable)}\n'
            'args = ["-c", "import time; time.sleep(60)"]\nstart_timeout_s = 1\n',
            "did not list its tools within 1 s",
        ),
        (
            '[[tools.mcp]]\nname = "t"\nurl = "http://127.0.0.1:9/mcp"\nstart_timeout_s = 5\n',
            "MCP server 't' could not start",
        ),
    ],
)
def test_a_server_that_cannot_start_is_a_config_error(ws: Path, toml: str, why: str) -> None:
    with pytest.raises(ConfigError, match="could not start") as caught:
        _agent(ws, toml, ScriptedModel([call("finish", summary="d")])).run("t")
    assert why in str(caught.value)


def test_the_cli_says_one_line_and_exits_2(ws: Path) -> None:
    (ws / "gg.toml").write_text('[[tools.mcp]]\nname = "t"\ncommand = "/nonexistent/srv"\n')
    script = ws.parent / "script.json"
    finish = {"name": "finish", "arguments": {"summary": "d"}}
    script.write_text(json.dumps({"replies": [{"tool_calls": [finish]}]}))
    done = subprocess.run(
        [sys.executable, "-m", "gg", "run", "t", "--workspace", str(ws),
         "--model", f"scripted:{script}"],
        capture_output=True, text=True, timeout=120, cwd=ws.parent,
        env={**os.environ, "PYTHONPATH": str(Path(gg.__file__).parents[1])},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "MCP server 't' could not start" in lines[0], done.stderr


def test_a_huge_result_is_cut_to_the_output_cap(ws: Path) -> None:
    toml = _stdio() + "[tools]\noutput_cap = 1000\n"
    model = ScriptedModel([call("mcp__t__shout", n=200_000), call("finish", summary="d")])
    assert _agent(ws, toml, model).run("t").status == "ended"
    told = _told(model, 1)
    assert len(told) <= 1000 and "characters cut" in told


def test_names_are_prefixed_and_distinct() -> None:
    from gg.mcp.names import registry_names

    names = registry_names("s", ["a-b", "a.b", "x" * 80, "finish", "ünï"])
    assert names[0] == "mcp__s__a_b" and names[1] == "mcp__s__a_b_2"
    assert names[3] == "mcp__s__finish"  # never the ending call itself
    assert all(n.isidentifier() and len(n) <= 64 and n.startswith("mcp__s__") for n in names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(
    "extra",
    ["sandboxed = false", 'pass_env = ["HOME"]'],
    ids=["on the host", "pass_env"],
)
def test_an_agent_weakening_an_mcp_server_is_refused(ws: Path, extra: str) -> None:
    first = _agent(ws, _stdio(), ScriptedModel([call("finish", summary="d")])).run("t")
    assert first.status == "ended"
    (ws / "gg.toml").write_text(_stdio(extra=extra))  # as an agent could
    with pytest.raises(gg.UserError, match="--trust-config"):
        gg.Agent(model=ScriptedModel([call("finish", summary="d")]), workspace=ws).run("t")


def test_a_host_server_runs_in_the_workspace(ws: Path) -> None:
    model = ScriptedModel(
        [call("mcp__t__where"), call("mcp__t__add", a=1, b=2), call("finish", summary="d")]
    )
    result = _agent(ws, _stdio(extra="sandboxed = false"), model).run("t")
    assert result.status == "ended", result.diagnosis
    assert f"cwd={ws}" in _told(model, 1) and _told(model, 2) == "3"


def test_a_killed_gg_leaves_no_server_behind(ws: Path) -> None:
    marker = f"gg-mcp-test-{secrets.token_hex(4)}"
    (ws / "gg.toml").write_text(_stdio(marker=marker, extra="timeout_s = 600"))
    script = ws.parent / "script.json"
    hang = {"name": "mcp__t__hang", "arguments": {}}
    script.write_text(json.dumps({"replies": [{"tool_calls": [hang]}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gg", "run", "t", "--workspace", str(ws),
         "--model", f"scripted:{script}"],
        env={**os.environ, "PYTHONPATH": str(Path(gg.__file__).parents[1])},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not _alive(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(marker), "the server never started"
        time.sleep(1)  # the hung call is under way
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 20
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(marker)


def test_an_agent_binding_a_host_file_into_a_server_is_refused(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("not for agents")
    first = _agent(ws, _stdio(), ScriptedModel([call("finish", summary="d")])).run("t")
    assert first.status == "ended"
    (ws / "gg.toml").write_text(_stdio(marker=str(secret)))  # a host file in the args
    with pytest.raises(gg.UserError, match="--trust-config") as caught:
        gg.Agent(model=ScriptedModel([call("finish", summary="d")]), workspace=ws).run("t")
    assert str(secret) in str(caught.value)


def test_ctrl_c_while_a_server_starts_stops_it_and_exits_130(ws: Path) -> None:
    marker = f"gg-mcp-test-{secrets.token_hex(4)}"
    (ws / "gg.toml").write_text(
        f'[[tools.mcp]]\nname = "t"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-c", "import time; time.sleep(120)", "{marker}"]\nstart_timeout_s = 120\n'
    )
    script = ws.parent / "script.json"
    script.write_text(json.dumps({"replies": [{"tool_calls": [{"name": "finish"}]}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gg", "run", "t", "--workspace", str(ws),
         "--model", f"scripted:{script}"],
        env={**os.environ, "PYTHONPATH": str(Path(gg.__file__).parents[1])},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not _alive(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(marker), "the server never started"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    deadline = time.monotonic() + 20
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(marker)


def test_a_read_access_server_cannot_write_the_workspace(ws: Path) -> None:
    """``access = "read"`` is enforced: the sandboxed server sees the workspace read-only."""
    model = ScriptedModel(
        [call("mcp__t__write_note", name="note.txt", text="mine"), call("approve", comments="ok")]
    )
    toml = _stdio(extra='access = "read"')
    assert _agent(ws, toml, model, role="review").run("review").status == "ended"
    assert not (ws / "note.txt").exists()
    assert "Read-only file system" in _told(model, 1) or "rror" in _told(model, 1)
    # the same server with write access does write (the check above can fail)
    model = ScriptedModel(
        [call("mcp__t__write_note", name="note.txt", text="mine"), call("finish", summary="ok")]
    )
    assert _agent(ws, _stdio(), model).run("write").status == "ended"
    assert (ws / "note.txt").read_text() == "mine"


def test_a_backtracking_pattern_in_a_servers_schema_cannot_hold_gg(ws: Path) -> None:
    schema = check_schema(
        "t", "x", {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    )
    started = time.monotonic()
    stripped = _without_patterns(schema)
    assert list(jsonschema.Draft202012Validator(stripped).iter_errors({"s": "a" * 40 + "!"})) == []
    assert time.monotonic() - started < 5
    deep: dict[str, object] = {"type": "object"}
    for _ in range(400):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(gg.UserError, match="nested too deep|invalid input schema"):
        check_schema("t", "deep", deep)
