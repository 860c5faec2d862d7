"""``gg serve`` as a process: its binding, its refusals and its bounded, checked reads.

Every test starts the real command on 127.0.0.1 with ``--port 0`` and talks HTTP to it
(no browser needed here); the workspaces' state is written by the tests as an adversary
would write it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from web_support import Served, child_env

import gg
from gg.board import Board
from gg.state import state_path
from gg.testing import ScriptedModel, call
from gg.web.streams import MAX_LINE_BYTES, Tail


def _get(url: str, *, method: str = "GET", host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, method=method)
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} give them) listening on ``port``."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                out.append(local.rsplit(":", 1)[0])
    return out


def _repository(path: Path) -> None:
    """Make ``path`` a git repository on ``main`` with one commit: a board needs one."""
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "--allow-empty", "-m", "base"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})  # fmt: skip


def _one_run(workspace: Path, summary: str = "done") -> gg.RunResult:
    workspace.mkdir(exist_ok=True)
    model = ScriptedModel([call("finish", summary=summary)])
    return gg.Agent(model=model, workspace=workspace).run("do it")


def test_help_answers() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gg", "serve", "--help"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    assert "--host" in out.stdout and "--port" in out.stdout and "read-only" in out.stdout


def test_the_default_binds_loopback_only_and_says_nothing_alarming(workspace: Path) -> None:
    with Served(workspace) as served:
        port = int(served.url.rsplit(":", 1)[1].strip("/"))
        assert served.url.startswith("http://127.0.0.1:")
        assert _listening(port) == ["0100007F"]  # 127.0.0.1, and nothing else
        assert _get(served.url)[0] == 200
    assert "warning" not in served.stderr


def test_another_host_needs_the_flag_and_is_warned_about(workspace: Path) -> None:
    with Served(workspace, "--host", "0.0.0.0") as served:
        port = int(served.url.rsplit(":", 1)[1].strip("/"))
        assert _listening(port) == ["00000000"]
        status, _ = _get(f"http://127.0.0.1:{port}/")
        assert status == 200
    assert "warning: listening on 0.0.0.0, not loopback" in served.stderr
    assert "no authentication" in served.stderr


def test_read_only_and_only_for_its_own_host_names(workspace: Path) -> None:
    with Served(workspace) as served:
        assert _get(served.url, method="POST")[0] == 405
        assert _get(served.url, method="DELETE")[0] == 405
        assert _get(served.url, host="attacker.example")[0] == 400  # DNS rebinding
        assert _get(served.url, host="localhost:1234")[0] == 200
        with urllib.request.urlopen(served.url, timeout=20) as answer:
            policy = answer.headers["Content-Security-Policy"]
            assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


def test_a_run_id_that_is_not_a_run_is_a_404(workspace: Path, tmp_path: Path) -> None:
    result = _one_run(workspace)
    runs = state_path(workspace) / "runs"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "stream.jsonl").write_bytes(result.stream.read_bytes())
    os.symlink(elsewhere, runs / "linked")  # a link planted among the runs
    with Served(workspace) as served:
        assert _get(f"{served.url}runs/{result.run_id}")[0] == 200
        for bad in ("nope", "..%2F..%2Fetc", "%2E%2E", ".hidden", "linked", "a" * 200):
            status, body = _get(f"{served.url}runs/{bad}")
            assert status == 404, bad
            assert "root:" not in body
        assert _get(f"{served.url}events/runs/linked")[0] == 404
        assert _get(f"{served.url}static/..%2Fapp.py")[0] == 404


def test_a_forged_line_is_caught_and_nothing_after_it_is_shown(workspace: Path) -> None:
    result = _one_run(workspace)
    lines = result.stream.read_bytes().splitlines(keepends=True)
    forged = json.loads(lines[-2])
    forged["summary"] = "FORGED"
    lines[-2] = json.dumps(forged).encode() + b"\n"
    result.stream.write_bytes(b"".join(lines))
    with Served(workspace) as served:
        status, body = _get(f"{served.url}runs/{result.run_id}")
        _, board = _get(served.url)
    assert status == 200
    assert "STREAM ALTERED" in body and "FORGED" not in body
    assert 'data-seal="altered"' in board and "STREAM ALTERED at event" in board


def test_huge_and_hostile_streams_are_read_in_bounded_amounts(workspace: Path) -> None:
    result = _one_run(workspace, summary="<script>window.__pwned=1</script>")
    with result.stream.open("ab") as f:  # a monster line, then a torn one
        f.write(b'{"type":"turn","text":"' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n{"ty')
    with Served(workspace) as served:
        status, body = _get(f"{served.url}runs/{result.run_id}")
        assert status == 200
        assert "<script>window.__pwned" not in body
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body
        assert "x" * 10_000 not in body
        status, board = _get(served.url)
        assert status == 200 and result.run_id in board


def test_a_tail_never_reads_past_its_limit_nor_keeps_an_endless_line(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"a\n" + b"y" * (MAX_LINE_BYTES + 1) + b"\nb\n" + b"z" * 5000)
    tail = Tail(path)
    assert tail.poll() == [b"a", b"b"] and tail.skipped == 1
    path.write_bytes(b"w" * (3 * MAX_LINE_BYTES))
    endless = Tail(path, limit=MAX_LINE_BYTES * 2)
    while endless.poll():
        pass
    assert endless.poll() == [] and endless.offset == MAX_LINE_BYTES * 2 and endless.cut
    assert len(endless._partial) <= MAX_LINE_BYTES


@pytest.mark.parametrize("damage", ["history", "none"])
def test_hostile_board_rows_render_as_text_or_a_clear_error(workspace: Path, damage: str) -> None:
    _repository(workspace)
    with Board(workspace) as board:
        number = board.add("<b>bold</b> title").number
    db = sqlite3.connect(state_path(workspace) / "board.sqlite3")  # behind gg's back
    db.execute("UPDATE issues SET diagnosis = ? WHERE number = ?", ("<i>x", number))
    if damage == "history":
        db.execute("UPDATE history SET detail = '{not json'")
    db.commit()
    db.close()
    with Served(workspace) as served:
        status, body = _get(served.url)
    assert status == 200
    assert "<b>bold</b>" not in body and "<i>x" not in body
    if damage == "history":
        assert "this issue&#x27;s records cannot be read" in body
        assert "&lt;b&gt;bold&lt;/b&gt; title" in body
    else:
        assert "&lt;b&gt;bold&lt;/b&gt; title" in body and "&lt;i&gt;x" in body


def test_the_store_the_workspace_names_is_the_one_shown(workspace: Path, tmp_path: Path) -> None:
    named = tmp_path / "elsewhere.sqlite3"
    (workspace / "gg.toml").write_text(f'[board]\nstore = "sqlite:{named}"\n')
    _repository(workspace)
    with Board(workspace) as board:
        board.add("Kept in another file")
    assert named.is_file()
    with Served(workspace) as served:
        status, body = _get(served.url)
    assert status == 200 and "Kept in another file" in body


def test_a_store_a_changed_gg_toml_newly_names_is_not_read_without_trust(
    workspace: Path, tmp_path: Path
) -> None:
    """The trust rule (issue 9) holds for the page too: nothing is opened or sent to a
    store an agent could have named, until the operator says ``--trust-config``."""
    named = tmp_path / "elsewhere.sqlite3"
    _repository(workspace)
    _one_run(workspace)  # the plain gg.toml is now the workspace's approved one
    (workspace / "gg.toml").write_text(f'[board]\nstore = "sqlite:{named}"\n')
    with Board(workspace, trust_config=True) as board:
        board.add("Kept in another file")
    with Served(workspace) as served:
        status, body = _get(served.url)
    assert status == 200 and "Kept in another file" not in body
    assert "--trust-config" in body and "[board] store" in body, body
    with Served(workspace, "--trust-config") as served:
        status, body = _get(served.url)
    assert status == 200 and "Kept in another file" in body


def test_a_broken_gg_toml_is_said_on_the_page(workspace: Path) -> None:
    (workspace / "gg.toml").write_text("[board]\nstore = <script>\n")
    with Served(workspace) as served:
        status, body = _get(served.url)
    assert status == 200
    assert "the workspace&#x27;s gg.toml" in body and "<script>" not in body.split("</head>")[1]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-w", "/nonexistent/ws"], "--workspace"),
        (["--port", "70000"], "--port"),
        (["--host", "192.0.2.1", "--port", "0"], "--host 192.0.2.1 --port 0: cannot listen"),
    ],
)
def test_bad_usage_is_exit_2_with_the_flag_named(
    workspace: Path, args: list[str], said: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gg", "serve", "-w", str(workspace), *args],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and said in out.stderr, out.stderr
