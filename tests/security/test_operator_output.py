"""Operator output is inert (issue 9 Build item 8, Must show "terminal escapes"; issue 12).

Real runs through the real CLI in a subprocess (scripted model, real sandbox,
real hooks, real git for the board): whatever a model, a program, a tool, a
hook, an issue or a file name says reaches the operator's terminal (live view,
``gg show``, ``gg watch``, board views, ``--json``) with no control character,
escape sequence, lone CR, bidi control or invisible format character, and rich
never reads it as markup; the stream keeps the raw text exactly.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from gg.board.display import BoardDisplay, detail_view, issues_table
from gg.board.git import GIT_IDENTITY
from gg.board.store import HistoryEntry, Issue, IssueDetail, IssueState, SessionRecord, Verdict
from gg.board.workflow import Progress
from gg.render import Renderer, summary_table
from gg.stream import parse_event, read_events
from gg.terminal import inert, inert_json, inert_text, line
from support import write_script

GG = [sys.executable, "-m", "gg"]

PAYLOADS: dict[str, str] = {
    "csi-clear": "\x1b[2J\x1b[H",
    "csi-cursor-overwrite": "\x1b[1A\x1b[2Kall tests passed",
    "sgr-conceal": "\x1b[8mhidden\x1b[0m",
    "osc52-bel": "\x1b]52;c;cm0gLXJmIH4K\x07",
    "osc52-st": "\x1b]52;c;cm0gLXJmIH4K\x1b\\",
    "osc8-link": "\x1b]8;;file:///etc/passwd\x1b\\click\x1b]8;;\x1b\\",
    "osc-title": "\x1b]0;pwned\x07",
    "dcs": "\x1bP+q544e\x1b\\",
    "apc-pm-sos": "\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\",
    "csi-8bit": "\x9b2J\x9b31m",
    "osc-8bit": "\x9d52;c;cm0gLXJmIH4K\x9c",
    "cr-overwrite": "rm -rf /\rls -la    ",
    "backspaces": "evil\x08\x08\x08\x08good",
    "bidi": "\u202egnp.exe\u202c \u2066isolated\u2069 \u200fmark",
    "invisible": "ad\u200bmin\ufeff\u2028sep\u2029\u00ad",
    "c0-mix": "nul\x00bel\x07vt\x0bff\x0cdel\x7fesc\x1b",
}
MARKUP = [
    "Fix the [/api/users] route",
    "[bug] fix crash",
    "[bold red]x[/]",
    "[link=file:///etc/passwd]x[/link]",
    ":warning: [/] [[/]] \\[x]",
]


def _forbidden(char: str) -> bool:
    """A character that must never reach the operator's terminal."""
    return char not in "\n\t" and unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def assert_inert(data: bytes | str, where: str) -> str:
    """``data`` (raw captured bytes: no universal-newline translation) holds nothing a
    terminal acts on besides newline and tab; returns it decoded."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    bad = sorted({c for c in text if _forbidden(c)})
    assert not bad, f"{where}: {bad!r} reached the terminal:\n{text[:3000]}"
    assert "Traceback" not in text, f"{where}:\n{text[-3000:]}"
    return text


def shown(payload: str) -> str:
    """What the operator sees of ``payload`` on a one-line field."""
    return " ".join(inert(payload).split())


def gg(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run the real ``gg`` in a subprocess; exit code, stdout and stderr, both checked inert."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE")
    }
    env.update(COLUMNS="400", NO_COLOR="1")
    p = subprocess.run([*GG, *args], capture_output=True, timeout=240, cwd=cwd, env=env)
    where = " ".join(args[:3])
    return (
        p.returncode,
        assert_inert(p.stdout, f"{where} stdout"),
        assert_inert(p.stderr, f"{where} stderr"),
    )


def stream_strings(path: Path) -> list[str]:
    """Every string value of every event in a stream file (parsed, so unescaped)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for event in read_events(path):
        walk(event.model_dump())
    return out


def in_stream(path: Path, needle: str) -> bool:
    """``needle`` (raw) is part of some string of the stream."""
    return any(needle in s for s in stream_strings(path))


def find_stream(workspace: Path) -> Path:
    """The one stream of a workspace's runs (in the workspace or gg's state dir)."""
    roots = [workspace / ".gg", Path(os.environ["GG_STATE_HOME"])]
    found = [p for r in roots if r.exists() for p in r.rglob("stream.jsonl")]
    assert len(found) == 1, found
    return found[0]


# --- the neutraliser -------------------------------------------------------------------


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_every_payload_is_inert_and_visible(payload: str) -> None:
    out = inert(payload)
    assert_inert(out, "inert")
    assert "\r" not in out and "\x1b" not in out
    assert inert(out) == out  # idempotent: shown twice, same text
    assert json.loads(inert_json({"k": payload}))["k"] == payload
    assert_inert(inert_json({"k": payload}), "inert_json")


def test_ordinary_unicode_passes_unchanged() -> None:
    for text in [
        "café naïve Ærøskøbing",
        "日本語のテキスト 中文 한국어",
        "emoji 😀 👍🏽 ❤️",
        "family 👨\u200d👩\u200d👧 rainbow 🏳\ufe0f\u200d🌈",
        "flag 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
        "Persian \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
        "Hindi क्\u200dष",
        "tab\there\nnew line",
        "[bold]x[/]",
        "עברית",
    ]:
        assert inert(text) == text, text


def test_the_chosen_notation() -> None:
    assert inert("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert inert("a\r\nb\rc") == "a\nb\\rc"
    assert inert("\x9b\x85\u202e\u2028") == "\\x9b\\x85\\u202e\\u2028"
    assert inert("\ud800") == "\\ud800"
    assert inert("ad\u200dmin") == "ad\\u200dmin"  # a joiner between ASCII letters hides
    assert inert("\U000e0041") == "\\U000e0041"  # tags outside a flag smuggle text


def test_every_control_and_format_code_point_is_covered() -> None:
    for code in range(0x110000):
        char = chr(code)
        out = inert(char, ())  # no secrets: the escaping alone (not the environment's, per call)
        if _forbidden(char):
            assert out != char and not any(_forbidden(c) for c in out), hex(code)
        elif char.isprintable():
            assert out == char, hex(code)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)))
def test_property_nothing_a_terminal_acts_on_survives(text: str) -> None:
    out = inert(text)
    for i, char in enumerate(out):
        if char in ("\u200c", "\u200d"):  # kept only between two visible non-ASCII characters
            assert 0 < i < len(out) - 1 and ord(out[i - 1]) > 0x7F and ord(out[i + 1]) > 0x7F
            assert not _forbidden(out[i - 1]) and not _forbidden(out[i + 1])
        elif "\U000e0020" <= char <= "\U000e007f":  # kept only inside a subdivision flag
            assert "\U0001f3f4" in out[:i]
        else:
            assert not _forbidden(char), (text, out)
    assert "\r" not in out
    out.encode("utf-8")  # no lone surrogate
    assert json.loads(inert_json(text)) == text
    assert_inert(inert_json(text), "inert_json")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_property_printable_text_passes_unchanged(text: str) -> None:
    assert inert(text) == text
    assert inert(text + "\n\t" + text) == text + "\n\t" + text


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(MARKUP))
def test_property_rich_never_reads_markup(text: str, markup: str) -> None:
    console = Console(file=io.StringIO(), width=400, color_system=None)
    console.print(line(("gg:", "red"), " ", markup, text), inert_text(markup))
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert printed.count(markup) >= 2, printed


# --- in-process views over forged records ----------------------------------------------


def _events(p: str) -> list[Any]:
    base = {"run_id": f"r{p}", "session_id": f"s{p}", "at": "2026-01-01T00:00:00.000Z"}
    rows: list[dict[str, Any]] = [
        {
            "type": "run_started",
            "settings": {"model": {"spec": f"m{p}"}},
            "isolation": p,
            "workspace": f"/w{p}",
        },
        {
            "type": "session_started",
            "role": p,
            "mode": p,
            "language": p,
            "arm": p,
            "model": p,
            "parent": p,
            "task": p,
        },
        {"type": "turn", "turn": 1, "text": p, "calls": [p], "usage": {}, "seconds": 0.1},
        {"type": "tool_call", "name": p, "arguments": {p: p}},
        {"type": "tool_call", "name": p, "arguments": p},
        {"type": "tool_result", "name": p, "ok": False, "excerpt": p},
        {"type": "error_turn", "kind": "unknown_tool", "message": p},
        {"type": "ending_declared", "call": p, "arguments": {"summary": p}},
        {"type": "ending_refused", "call": p, "reason": "shape", "message": p},
        {"type": "ending_revoked", "call": p, "error": p},
        {"type": "gate_passed", "call": p},
        {"type": "gate_blocked", "hook": p, "reason": p, "failed": True},
        {"type": "ceiling_tripped", "ceiling": "max_turns", "diagnosis": p},
        {"type": "session_ended", "ending": {"call": p, "items": [p]}, "turns": 2},
        {"type": "run_ended", "status": "stopped", "exit_code": 1, "diagnosis": p},
    ]
    return [parse_event(json.dumps({**base, **row})) for row in rows]


@pytest.mark.parametrize(
    "payload",
    [*PAYLOADS.values(), *MARKUP],
    ids=[*PAYLOADS, *(f"markup{i}" for i in range(len(MARKUP)))],
)
def test_renderer_shows_every_field_of_a_forged_stream_inert(payload: str) -> None:
    console = Console(file=io.StringIO(), width=400, color_system=None)
    renderer = Renderer(console)
    events = _events(payload)
    for event in events:
        renderer(event)
    console.print(summary_table(events))
    out = assert_inert(console.file.getvalue(), "renderer")  # type: ignore[attr-defined]
    assert out.count(shown(payload)) >= 15, out


def test_the_spinner_line_is_inert() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    renderer = Renderer(console, spinner=True)
    for payload in PAYLOADS.values():
        renderer.delta(payload + "[/api/users]")
        assert renderer._status is not None
        status = renderer._status.status
        assert_inert(status.plain if isinstance(status, Text) else str(status), "spinner")


@pytest.mark.parametrize(
    "payload",
    [*PAYLOADS.values(), *MARKUP],
    ids=[*PAYLOADS, *(f"markup{i}" for i in range(len(MARKUP)))],
)
def test_board_views_of_forged_records_are_inert(payload: str) -> None:
    issue = Issue(
        number=1,
        title=f"T{payload}",
        body=f"B{payload}",
        state=IssueState.STUCK,
        round=2,
        branch=f"gg/{payload}",
        summary=payload,
        diagnosis=f"D{payload}",
        merge_sha=None,
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
    )
    detail = IssueDetail(
        issue=issue,
        sessions=(
            SessionRecord(
                id=1,
                kind="implementer",
                round=1,
                reviewer=None,
                run_id=payload,
                session_id=payload,
                status=payload,  # type: ignore[arg-type]
                ending={"call": "finish", "summary": payload},
                diagnosis=payload,
                started_at="x",
                ended_at=None,
            ),
        ),
        verdicts=(
            Verdict(
                round=1,
                reviewer=1,
                call=payload,  # type: ignore[arg-type]
                items=(payload, payload),
                session=1,
                at="x",
            ),
        ),
        history=(
            HistoryEntry(
                at="2026-01-01T00:00:00",
                event=payload,
                from_state=IssueState.OPEN,
                to_state=IssueState.STUCK,
                detail={"why": payload},
            ),
        ),
    )
    console = Console(file=io.StringIO(), width=400, color_system=None)
    display = BoardDisplay(console, live=False)
    display(Progress(issue=issue, activity=f"A{payload}", event="session"))
    console.print(display.table(), issues_table([issue]), detail_view(detail))
    out = assert_inert(console.file.getvalue(), "board views")  # type: ignore[attr-defined]
    assert out.count(shown(payload)[:30]) >= 8, out


# --- real runs through the CLI ---------------------------------------------------------


def _text_file(payload: str) -> str:
    """``payload`` as read_file can read it (a NUL makes a file binary: a tool error)."""
    return payload.replace("\x00", "")


def _workspace(tmp_path: Path, payload: str) -> tuple[Path, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(f"BEGIN{_text_file(payload)}END\n")
    name = "f" + payload.replace("/", "_").replace("\x00", "_") + ".txt"
    (ws / name).write_text("x")
    (ws / "reason.bin").write_text(f"REASON<{payload}>END")
    (ws / "gg.toml").write_text(
        '[[hooks.agent_stop]]\ncommand = "test -f fixed.txt || { cat reason.bin >&2; exit 2; }"\n'
        "timeout_s = 60\n"
    )
    return ws, name


@pytest.mark.parametrize(
    "payload",
    [*PAYLOADS.values(), MARKUP[0], MARKUP[3]],
    ids=[*PAYLOADS, "markup-api", "markup-link"],
)
def test_run_show_watch_are_inert(tmp_path: Path, payload: str) -> None:
    ws, name = _workspace(tmp_path, payload)
    script = write_script(
        tmp_path / "r.json",
        [
            {
                "text": f"thinking {payload} MARKREPLY",
                "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
            },
            {"tool_calls": [{"name": "list_dir", "arguments": {}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": f"missing{payload}"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": f"first {payload}"}}]},
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "fixed.txt", "content": payload}}
                ]
            },
            {"tool_calls": [{"name": "finish", "arguments": {"summary": f"done {payload}"}}]},
        ],
    )
    code, out, live = gg("run", "t", "-w", str(ws), "--model", f"scripted:{script}", "--json")
    assert code == 0, live
    result = json.loads(out)  # pure JSON, round-tripping the raw text
    assert result["ending"] == {"call": "finish", "summary": f"done {payload}".strip()}
    stream = Path(result["stream"])
    for needle in (
        f"thinking {payload} MARKREPLY",
        f"BEGIN{_text_file(payload)}END",
        name[:-4],
        f"REASON<{payload}>END",
        f"done {payload}",
    ):
        assert in_stream(stream, needle), needle  # the stream keeps the raw text
    code, replay, _ = gg("show", result["run_id"], "-w", str(ws))
    assert code == 0
    code, followed, _ = gg("watch", str(stream))
    assert code == 0
    for view in (live, replay, followed):
        for needle in (
            shown(f"thinking {payload} MARKREPLY"),
            shown(f"BEGIN{_text_file(payload)}END"),
            shown(f"REASON<{payload}>END"),
            "ending gate blocked",
            "run ended",
        ):
            assert needle in view, (needle, view)
        assert "turn 5" in view and "gate passed" in view  # gg went on after each


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_code_mode_program_output_and_summary_are_inert(tmp_path: Path, payload: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    program = (
        f"import sys\nsys.stdout.write({payload!r} + 'PRINTED')\nprint()\n"
        f"gg.session.finish({('sum ' + payload)!r})"
    )
    script = write_script(
        tmp_path / "r.json",
        [
            {
                "text": f"my program {payload}",
                "tool_calls": [{"name": "submit_program", "arguments": {"program": program}}],
            }
        ],
    )
    code, out, err = gg(
        "run",
        "t",
        "-w",
        str(ws),
        "--model",
        f"scripted:{script}",
        "--mode",
        "code",
        "--language",
        "python",
    )
    assert code == 0, out + err
    stream = find_stream(ws)
    summary = f"sum {payload}".strip()
    assert in_stream(stream, payload + "PRINTED") and in_stream(stream, summary)
    assert shown(f"{payload}PRINTED") in out  # the program's print, visible and inert
    assert f"finish: {inert(summary)}" in out  # the ending summary
    code, replay, _ = gg("show", str(stream))
    assert code == 0 and shown(f"{payload}PRINTED") in replay


@pytest.mark.parametrize(
    "payload",
    [*PAYLOADS.values(), *MARKUP],
    ids=[*PAYLOADS, *(f"markup{i}" for i in range(len(MARKUP)))],
)
def test_request_changes_items_are_inert(tmp_path: Path, payload: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    items = [f"item {payload}", "[bold red]x[/]", "[link=file:///etc/passwd]x[/link]"]
    script = write_script(
        tmp_path / "r.json",
        [{"tool_calls": [{"name": "request_changes", "arguments": {"items": items}}]}],
    )
    code, out, err = gg(
        "run", "review", "-w", str(ws), "--model", f"scripted:{script}", "--role", "review"
    )
    assert code == 0, out + err
    assert f"  - item {inert(payload).strip()}" in out
    assert "  - [bold red]x[/]" in out and "  - [link=file:///etc/passwd]x[/link]" in out
    assert in_stream(find_stream(ws), f"item {payload}".strip())


# --- the board, real git ---------------------------------------------------------------

GREET_FIXED = 'def greet(name):\n    return f"Hello, {name}!"\n'


def make_repo(path: Path) -> Path:
    """A real git repository on ``main`` with one file and a gg.toml (no hooks)."""
    path.mkdir(parents=True)
    env = {**os.environ, **GIT_IDENTITY}
    (path / "greet.py").write_text('def greet(name):\n    return "hello " + name\n')
    (path / "gg.toml").write_text("[ceilings]\nmax_turns = 12\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path


BOARD_CASES = {
    "a": ["csi-clear", "osc52-bel", "bidi", "cr-overwrite"],
    "b": ["osc52-st", "csi-8bit", "backspaces", "dcs"],
    "c": ["osc8-link", "invisible", "c0-mix", "apc-pm-sos"],
}


@pytest.mark.parametrize("case", list(BOARD_CASES))
def test_board_list_show_run_are_inert_and_never_markup(tmp_path: Path, case: str) -> None:
    p1, p2, p3, p4 = (PAYLOADS[k] for k in BOARD_CASES[case])
    repo = make_repo(tmp_path / "repo")
    w = ["-w", str(repo)]
    body = tmp_path / "body.md"
    body.write_text(f"body {p2} [/api/users]\n")
    assert (
        gg("board", "add", f"Fix the [/api/users] route {p1}", "--body-file", str(body), *w)[0] == 0
    )
    script = write_script(
        tmp_path / "one.json",
        [
            {
                "text": f"on it {p3}",
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "greet.py", "content": GREET_FIXED},
                    }
                ],
            },
            {"tool_calls": [{"name": "finish", "arguments": {"summary": f"Fixed {p4} [/]"}}]},
            {
                "tool_calls": [
                    {
                        "name": "request_changes",
                        "arguments": {
                            "items": [
                                f"item {p1}",
                                "[bold red]x[/]",
                                "[link=file:///etc/passwd]x[/link]",
                            ]
                        },
                    }
                ]
            },
            {"tool_calls": [{"name": "finish", "arguments": {"summary": f"Again {p2}"}}]},
            {"tool_calls": [{"name": "approve", "arguments": {}}]},
            # (a NUL in a merge summary: git refuses the commit message, the issue pauses)
            {"tool_calls": [{"name": "finish", "arguments": {"summary": f"Merged {p3!r}"}}]},
        ],
    )
    code, out, err = gg("board", "run", *w, "--model", f"scripted:{script}", "--concurrency", "1")
    assert code == 0, out + err  # a successful run ends by printing the table
    assert "Fix the [/api/users] route" in out
    assert "all 1 issue(s) on the board are done (1 by this run)" in out

    assert gg("board", "add", f"[bug] fix crash {p2}", "--body-file", str(body), *w)[0] == 0
    talk = write_script(tmp_path / "two.json", [{"text": f"talk {p4} [/]"}] * 3)
    code, out, err = gg("board", "run", *w, "--model", f"scripted:{talk}", "--concurrency", "1")
    assert code == 1 and "[bug] fix crash" in out and "not all done" in out, out + err
    for title in MARKUP[2:]:
        assert gg("board", "add", title, *w)[0] == 0

    code, listed, _ = gg("board", "list", *w)
    assert code == 0
    for title in ("Fix the [/api/users] route", "[bug] fix crash", *MARKUP[2:]):
        assert title in listed, (title, listed)
    assert shown(p1)[:20] in listed
    code, one, _ = gg("board", "show", "1", *w)
    assert code == 0
    for needle in (
        "Fix the [/api/users] route",
        f"body {shown(p2)} [/api/users]",
        f"item {shown(p1)}",
        "[bold red]x[/]",
        "[link=file:///etc/passwd]x[/link]",
    ):
        assert needle in one, (needle, one)
    code, two, _ = gg("board", "show", "2", *w)
    assert code == 0 and "[bug] fix crash" in two and "stuck" in two
    for n in range(3, 3 + len(MARKUP[2:])):
        code, out, _ = gg("board", "show", str(n), *w)
        assert code == 0 and MARKUP[n - 1] in out

    code, out, _ = gg("board", "list", *w, "--json")
    titles = [i["title"] for i in json.loads(out)]
    assert titles[:2] == [
        " ".join(f"Fix the [/api/users] route {p1}".split()),
        " ".join(f"[bug] fix crash {p2}".split()),
    ]  # one line, raw
    code, out, _ = gg("board", "show", "1", *w, "--json")
    detail = json.loads(out)
    assert detail["body"].strip() == f"body {p2} [/api/users]".strip()
    assert detail["verdicts"][0]["items"][0] == f"item {p1}".strip()


# --- errors on stderr that quote agent text ---------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        PAYLOADS["osc52-bel"],
        PAYLOADS["csi-8bit"],
        PAYLOADS["bidi"],
        PAYLOADS["cr-overwrite"],
        MARKUP[2],
    ],
    ids=["osc52-bel", "csi-8bit", "bidi", "cr-overwrite", "markup"],
)
def test_errors_that_quote_agent_text_are_inert(tmp_path: Path, payload: str) -> None:
    name = payload.replace("/", "_")
    code, _, err = gg("show", name, "-w", str(tmp_path))  # no such run: the path is quoted
    assert code == 2 and "no run" in err and len(err.strip().splitlines()) == 1
    forged = tmp_path / f"s{name}.jsonl"
    forged.write_text(json.dumps({"type": payload}) + "\n")
    code, _, err = gg("show", str(forged))
    assert code == 2 and "not a gg stream" in err
    assert shown(str(forged)) in err  # the path, visible and inert
    repo = make_repo(tmp_path / "repo")
    code, _, err = gg(
        "board", "add", "t", "--body-file", str(tmp_path / f"b{name}"), "-w", str(repo)
    )
    assert code == 2 and "--body-file" in err and len(err.strip().splitlines()) == 1
