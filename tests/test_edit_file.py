"""``edit_file``: one piece of a file replaced, exactly or by one unique loose match (issue 16).

On real files in temporary workspaces, through the registry tool and through scripted
sessions; the matching rules themselves (gg.tools.edits) with hypothesis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gg.errors import ToolError
from gg.models.base import ToolMessage
from gg.testing import ScriptedModel, call
from gg.tools import Tool, ToolContext, ToolsetArm, default_registry
from gg.tools.edits import SHOW_WHOLE, apply_edit
from support import RunScripted, events_of

CALC = (
    '"""A tiny calculator."""\n\n\n'
    "def add(a: float, b: float) -> float:\n"
    '    """Return a + b."""\n'
    "    return a + b\n\n\n"
    "def divide(a: float, b: float) -> float | None:\n"
    '    """Return a / b, or None when b is zero."""\n'
    "    return a / b\n"
)
# what a small model sends: the docstring line left out of old
OLD = "def divide(a: float, b: float) -> float | None:\n    return a / b\n"
NEW = (
    "def divide(a: float, b: float) -> float | None:\n"
    "    if b == 0:\n        return None\n    return a / b"
)
FIXED = CALC.replace(
    "    return a / b\n", "    if b == 0:\n        return None\n    return a / b\n"
)


def edit_tool() -> Tool:
    t = default_registry().get("edit_file")
    assert t is not None
    return t


async def edit(ws: Path, **arguments: Any) -> str:
    t = edit_tool()
    return await t.call(t.validate(arguments), ToolContext(workspace=ws))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    return root


# ---------------------------------------------------------------- through the tool


async def test_an_exact_edit_replaces_the_one_place_and_shows_it(ws: Path) -> None:
    out = await edit(ws, path="calc.py", old="    return a / b\n", new="    return a / b  # q\n")
    assert (ws / "calc.py").read_text() == CALC.replace("a / b\n", "a / b  # q\n")
    assert out == "edited calc.py: line 11 now read:\n    return a / b  # q"


async def test_a_left_out_line_is_kept_where_it_was(ws: Path) -> None:
    out = await edit(ws, path="calc.py", old=OLD, new=NEW)
    assert (ws / "calc.py").read_text() == FIXED
    assert out.startswith("edited calc.py (old matched loosely; kept 1 line(s) you left out)")
    assert out.endswith("    return a / b") and "lines 9-13 now read" in out


async def test_the_same_edit_again_changes_nothing_and_says_it_was_made(ws: Path) -> None:
    await edit(ws, path="calc.py", old=OLD, new=NEW)
    for _ in range(2):
        with pytest.raises(ToolError, match="already has new's lines .from line 9.: this edit"):
            await edit(ws, path="calc.py", old=OLD, new=NEW)
    assert (ws / "calc.py").read_text() == FIXED
    # an exact edit whose new holds its old: not stacked a second time either
    (ws / "f.py").write_text("x = 1\nreturn a / b\n")
    grow = {"path": "f.py", "old": "return a / b", "new": "if b:\n    y = 1\nreturn a / b"}
    await edit(ws, **grow)
    with pytest.raises(ToolError, match="this edit was made before"):
        await edit(ws, **grow)
    assert (ws / "f.py").read_text() == "x = 1\nif b:\n    y = 1\nreturn a / b\n"


async def test_indentation_is_taken_from_the_file(ws: Path) -> None:
    (ws / "k.py").write_text("class K:\n    def f(self):\n        return 1\n")
    await edit(ws, path="k.py", old="def f(self):\n    return 1", new="def f(self):\n    return 2")
    assert (ws / "k.py").read_text() == "class K:\n    def f(self):\n        return 2\n"


async def test_what_cannot_be_placed_for_sure_changes_nothing(ws: Path) -> None:
    two = "def f():\n    pass\n\n\ndef g():\n    pass\n"
    (ws / "two.py").write_text(two)
    with pytest.raises(ToolError, match="occurs 2 times"):
        await edit(ws, path="two.py", old="    pass\n", new="    return 1\n")
    with pytest.raises(ToolError, match="match 2 places .lines 2, 6."):
        await edit(ws, path="two.py", old="\tpass", new="\treturn 1")
    with pytest.raises(ToolError, match='calc.py is now:\n"""A tiny calculator."""\n'):
        await edit(ws, path="calc.py", old="def divide(a, b):\n    return a/b", new="x")
    big = CALC + "".join(f"\n\ndef f{i}(x: int) -> int:\n    return x * {i}\n" for i in range(99))
    assert len(big) > SHOW_WHOLE
    (ws / "big.py").write_text(big)
    with pytest.raises(
        ToolError, match="closest lines there are:\ndef divide.*\n.*\n    return a / b\n"
    ):
        await edit(ws, path="big.py", old="def divide(a, b):\n    return a/b", new="x")
    with pytest.raises(ToolError, match="read it and copy the exact lines"):
        await edit(ws, path="big.py", old="nothing like this at all", new="x")
    assert (ws / "big.py").read_text() == big
    with pytest.raises(ToolError, match="old is empty"):
        await edit(ws, path="calc.py", old=" \n", new="x")
    assert (ws / "two.py").read_text() == two and (ws / "calc.py").read_text() == CALC


async def test_files_that_are_not_plain_text_are_refused(ws: Path) -> None:
    (ws / "b.bin").write_bytes(b"ab\x00cd")
    (ws / "l1.txt").write_bytes(b"caf\xe9\n")
    (ws / "crlf.txt").write_bytes(b"a\r\n  b\r\n")
    for name in ("b.bin", "l1.txt"):
        with pytest.raises(ToolError, match="not UTF-8 text"):
            await edit(ws, path=name, old="a", new="b")
    with pytest.raises(ToolError, match="not found"):  # no loose match over CRLF lines
        await edit(ws, path="crlf.txt", old=" a\n b", new="c")
    await edit(ws, path="crlf.txt", old="  b\r\n", new="  c\r\n")  # exact still works
    assert (ws / "crlf.txt").read_bytes() == b"a\r\n  c\r\n"
    assert (ws / "b.bin").read_bytes() == b"ab\x00cd"


async def test_a_read_only_context_refuses_and_changes_nothing(ws: Path) -> None:
    t = edit_tool()
    args = t.validate({"path": "calc.py", "old": "a + b", "new": "b + a"})
    with pytest.raises(ToolError, match="may not change the workspace"):
        await t.call(args, ToolContext(workspace=ws, read_only=True))
    assert (ws / "calc.py").read_text() == CALC


def test_an_arm_withholding_write_file_withholds_edit_file_too() -> None:
    registry = default_registry()
    arm = ToolsetArm(name="no-writes", capabilities=("files",), withhold=("write_file",))
    assert [t.name for t in arm.select(registry)] == ["read_file", "list_dir", "search_text"]
    only_edit = ToolsetArm(name="edits", capabilities=("files",), withhold=("edit_file",))
    assert "write_file" in [t.name for t in only_edit.select(registry)]


# ---------------------------------------------------------------- in sessions


def texts(model: ScriptedModel) -> list[str]:
    return [m.content for m in model.calls[-1][0] if isinstance(m, ToolMessage)]


def test_a_session_fixes_the_file_and_a_repeat_points_at_the_ending(
    run_scripted: RunScripted, workspace: Path
) -> None:
    (workspace / "calc.py").write_text(CALC)
    fix = call("edit_file", path="calc.py", old=OLD, new=NEW)
    replies = [call("read_file", path="calc.py"), fix, fix, fix, call("finish", summary="fixed")]
    result, model = run_scripted(replies)
    assert result.status == "ended" and (workspace / "calc.py").read_text() == FIXED
    seen = texts(model)
    assert "this edit was made before" in seen[2]
    assert seen[3].startswith("Not run: you already made edit_file")
    assert "write_file" not in seen[3] and '"finish"' in seen[3]  # no write form to copy


def test_a_reviewer_is_not_offered_edit_file_and_its_call_is_refused(
    run_scripted: RunScripted, workspace: Path
) -> None:
    replies = [call("edit_file", path="README.md", old="demo", new="mine"), call("approve")]
    result, model = run_scripted(replies, role="review")
    assert "edit_file" not in model.calls[0][1]
    assert [e.kind for e in events_of(result) if e.type == "error_turn"] == ["unknown_tool"]
    assert (workspace / "README.md").read_text() == "# demo\n"


def test_gg_toml_cannot_be_edited(run_scripted: RunScripted, workspace: Path) -> None:
    (workspace / "gg.toml").write_text("[ceilings]\nmax_turns = 5\n")
    replies = [
        call("edit_file", path="gg.toml", old="max_turns = 5", new="max_turns = 500"),
        call("finish", summary="tried"),
    ]
    _, model = run_scripted(replies)
    assert "gg's own configuration" in texts(model)[0]
    assert (workspace / "gg.toml").read_text() == "[ceilings]\nmax_turns = 5\n"


# ---------------------------------------------------------------- the rules


_line = st.text(alphabet="abc xyz=():", min_size=1, max_size=12).map(str.rstrip).filter(bool)


@given(st.lists(_line, min_size=3, max_size=12, unique=True), st.data())
def test_an_exact_unique_piece_is_replaced_and_nothing_else(lines: list[str], data: Any) -> None:
    text = "\n".join(lines) + "\n"
    i = data.draw(st.integers(0, len(lines) - 1))
    old = lines[i] + "\n"
    if text.count(old) != 1 or ("\n" + old) not in ("\n" + text):
        return  # not a unique whole line: the exact rule is not what this checks
    done = apply_edit(text, old, "NEW\n", name="f")
    assert done.exact and done.text == "\n".join([*lines[:i], "NEW", *lines[i + 1 :]]) + "\n"


@given(st.lists(_line, min_size=4, max_size=12, unique=True), st.data())
def test_a_block_sent_with_a_line_left_out_keeps_that_line(lines: list[str], data: Any) -> None:
    stripped = [ln.strip() for ln in lines]
    if len(set(stripped)) != len(stripped):
        return  # equal lines after stripping make the loose match ambiguous by design
    i = data.draw(st.integers(0, len(lines) - 3))
    sent = f"{lines[i]}\n{lines[i + 2]}\n"  # the middle line left out
    if sent in "\n".join(lines) + "\n":
        return  # it occurs as sent (across other lines' ends): the exact rule applies
    done = apply_edit("\n".join(lines) + "\n", sent, f"{lines[i]}\nADDED\n{lines[i + 2]}", name="f")
    want = [*lines[: i + 1], lines[i + 1], "ADDED", *lines[i + 2 :]]
    assert not done.exact and done.kept == 1
    assert done.text == "\n".join(want) + "\n"


def test_hostile_shapes_get_a_plain_answer() -> None:
    """Inputs built to make the loose rules slow are refused or answered without them."""
    with pytest.raises(ToolError, match="occurs 8000 times"):
        apply_edit("a\n" * 8000, "a", "a", name="f")
    with pytest.raises(ToolError, match="read it and copy"):
        apply_edit(("x" * 50_000 + "\n") * 3 + "def f():\n", "y" * 1600, "z", name="f")
    with pytest.raises(ToolError, match="match 3851 places"):
        apply_edit("    a\n" * 4000, "a\n" * 150, "b\n" * 150, name="f")
