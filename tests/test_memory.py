"""Memories: ``remember`` / ``recall`` backed by SQLite in the workspace's gg state
(outside it; issue 9 item 2), and the on-recall script (SPEC T3, S13, issue 6)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

import gg
from gg.config import settings_from_dict
from gg.memory import SCHEMA_VERSION, MemoryStore, db_path, normalize_tags
from gg.testing import ScriptedModel, call
from support import events_of

CAPS = ["files", "shell", "memory"]


def memory_agent(workspace: Path, model: ScriptedModel, **memory: str) -> gg.Agent:
    settings = settings_from_dict({"tools": {"capabilities": CAPS}, "memory": memory})
    return gg.Agent(model=model, workspace=workspace, settings=settings)


def tool_results(model: ScriptedModel) -> list[str]:
    """The content of the last message each request saw, from the second request on."""
    return [str(msgs[-1].content) for msgs, _ in model.calls[1:]]


# ---------------------------------------------------------------- the store


@pytest.mark.parametrize("fts", [True, False])
def test_store_ranks_by_text_and_tags(tmp_path: Path, fts: bool) -> None:
    store = MemoryStore(tmp_path / "m.sqlite3", fts=fts)
    assert store.fts is fts
    a = store.add("Run the tests with pytest -q from the repo root", ["testing"])
    b = store.add("The CI config lives in .github/workflows/ci.yml", ["ci", "Testing"])
    c = store.add("Deploys go through the release script", ["release"])
    assert b.tags == ("ci", "testing")
    assert [m.id for m in store.search("pytest")] == [a.id]
    # both match the tag "testing"; the text of the first also matches "tests"
    assert {m.id for m in store.search("testing")} == {a.id, b.id}
    # a tag equal to a query word ranks first, whatever the text match
    assert store.search("ci tests")[0].id == b.id
    assert store.search("release")[0].id == c.id
    assert store.search("nothing like this") == []
    assert [m.id for m in store.search("", limit=2)] == [c.id, b.id]  # newest first
    assert store.count() == 3


def test_store_schema_is_versioned_and_shares_the_file(tmp_path: Path) -> None:
    path = tmp_path / ".gg" / "gg.sqlite3"
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE board_issues (id INTEGER PRIMARY KEY, title TEXT)")
        db.execute("INSERT INTO board_issues (title) VALUES ('someone else')")
    store = MemoryStore(path)
    store.add("note")
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM memory_meta WHERE key='schema_version'")
        assert version.fetchone() == (str(SCHEMA_VERSION),)
        assert db.execute("SELECT title FROM board_issues").fetchall() == [("someone else",)]
        db.execute("UPDATE memory_meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(gg.UserError, match="schema version 99, newer than"):
        MemoryStore(path)


def test_fts_index_catches_up_with_notes_added_without_it(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    MemoryStore(path, fts=False).add("written while FTS was off", ["x"])
    store = MemoryStore(path)
    assert store.fts and [m.text for m in store.search("FTS")] == ["written while FTS was off"]


def test_tags_are_normalized_and_bounded() -> None:
    assert normalize_tags([" #CI ", "Build Tools", "ci", ""]) == ("ci", "build-tools")
    with pytest.raises(gg.ToolError, match="longer than 40"):
        normalize_tags(["x" * 41])
    with pytest.raises(gg.ToolError, match="at most 20 tags"):
        normalize_tags([f"t{i}" for i in range(21)])


# ---------------------------------------------------------------- through agents


def test_memories_persist_across_two_runs(workspace: Path) -> None:
    first = ScriptedModel(
        [
            call("remember", text="The build needs `make gen` before tests.", tags=["build"]),
            call("finish", summary="noted"),
        ]
    )
    r1 = memory_agent(workspace, first).run("learn")
    assert r1.status == "ended"
    assert tool_results(first)[0] == "Remembered note #1 with tags build."
    assert db_path(workspace).is_file()

    second = ScriptedModel(
        [
            call("recall", query="how to build"),
            call("recall", query="deploy"),
            call("recall", query=""),
            call("finish", summary="recalled"),
        ]
    )
    r2 = memory_agent(workspace, second).run("use what you know")
    assert r2.status == "ended" and r2.run_id != r1.run_id
    found, missing, recent = tool_results(second)[:3]
    assert found.startswith("1 note match 'how to build':\n#1 (")
    assert found.endswith(", tags: build) The build needs `make gen` before tests.")
    assert missing == "No note matches 'deploy' (1 stored)."
    assert "#1 (" in recent


def test_memories_belong_to_the_run_workspace_not_a_session_worktree(
    workspace: Path,
    tmp_path: Path,
) -> None:
    other = tmp_path / "worktree"
    other.mkdir()
    model = ScriptedModel([call("remember", text="shared"), call("finish", summary="x")])
    agent = memory_agent(workspace, model)

    async def go() -> None:
        run = agent.new_run()
        await run.session("remember", workspace=other)
        run.end("ended")

    asyncio.run(go())
    assert db_path(workspace).is_file() and not db_path(other).exists()


def test_remember_refuses_empty_and_huge_notes(workspace: Path) -> None:
    model = ScriptedModel(
        [
            call("remember", text="  "),
            call("remember", text="x" * 10_001),
            call("recall", query="x", limit=0),
            call("finish", summary="x"),
        ]
    )
    result = memory_agent(workspace, model).run("t")
    assert result.status == "ended"
    empty, huge, bad = tool_results(model)[:3]
    assert empty == "Error: the note is empty: give the text to remember"
    assert huge.startswith("Error: a note holds at most 10,000 characters, got 10,001")
    assert "limit" in bad  # bad arguments: the schema's bound


def test_memory_tools_are_opt_in() -> None:
    assert "memory" not in gg.Settings().tools.capabilities
    assert gg.Settings().memory.on_recall is None
    with pytest.raises(gg.ConfigError, match="memory.on_recall") as info:
        settings_from_dict({"memory": {"on_recall": "hook.sh"}})
    assert info.value.key == "memory.on_recall"


# ---------------------------------------------------------------- on-recall script (sandbox)

ON_RECALL = """\
print("on recall:", recall["query"], [n["id"] for n in recall["notes"]])
gg.session.finish("a recall script must not end the session")
"""


def test_on_recall_script_runs_on_each_recall_and_cannot_end_the_session(
    workspace: Path,
) -> None:
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "on_recall.py").write_text(ON_RECALL)
    model = ScriptedModel(
        [
            call("remember", text="alpha note"),
            call("recall", query="alpha"),
            call("recall", query="beta"),
            call("finish", summary="done"),
        ]
    )
    result = memory_agent(workspace, model, on_recall="hooks/on_recall.py").run("t")
    assert result.status == "ended" and result.ending == gg.Finish(summary="done")
    _, alpha, beta = tool_results(model)[:3]
    assert alpha.startswith("1 note match 'alpha':\n#1")
    assert "on recall: alpha [1]" in alpha
    assert "on recall: beta []" in beta
    assert "the memory's on-recall script failed" in alpha.lower()  # the refusal raised in it
    assert "on-use scripts cannot end a session" in alpha
    refused = [e for e in events_of(result) if e.type == "ending_refused"]
    assert [(e.call, e.reason) for e in refused] == [("finish", "unavailable")] * 2
    assert not [e for e in events_of(result) if e.type == "error_turn"]


def test_missing_on_recall_script_is_a_tool_error(workspace: Path) -> None:
    model = ScriptedModel([call("recall", query="x"), call("finish", summary="done")])
    memory_agent(workspace, model, on_recall="nope.js").run("t")
    assert tool_results(model)[0].startswith("Error: [memory] on_recall: cannot read")


def test_memory_tool_names_are_taken_only_when_memory_is_chosen(workspace: Path) -> None:
    def recall(query: str) -> str:
        """The user's own recall."""
        return f"mine: {query}"

    model = ScriptedModel([call("recall", query="q"), call("finish", summary="x")])
    gg.Agent(model=model, workspace=workspace, tools=[recall]).run("t")
    assert tool_results(model)[0] == "mine: q"
    with pytest.raises(gg.UserError, match="'recall' is already registered"):
        memory_agent(workspace, ScriptedModel([])).registry.register(gg.tool(recall))


def test_on_recall_events_carry_the_calling_turn(workspace: Path) -> None:
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "on_recall.py").write_text(ON_RECALL)
    model = ScriptedModel(
        [call("recall", query="a"), call("recall", query="b"), call("finish", summary="done")]
    )
    result = memory_agent(workspace, model, on_recall="hooks/on_recall.py").run("t")
    refused = [e for e in events_of(result) if e.type == "ending_refused"]
    assert [(e.session_id, e.turn) for e in refused] == [("s1", 1), ("s1", 2)]


@pytest.mark.parametrize(
    ("script", "line"),
    [
        ("x = 1\ny = 2\nraise ValueError('on line three')\n", 3),
        ("def f():\n    return 1 / 0\n\nf()\n", 2),
        ("import os\n\n\n\nos.no_such_function()\n", 5),
    ],
)
def test_on_recall_tracebacks_name_the_files_own_lines(
    workspace: Path, script: str, line: int
) -> None:
    (workspace / "on_recall.py").write_text(script)
    model = ScriptedModel([call("recall", query="q"), call("finish", summary="done")])
    memory_agent(workspace, model, on_recall="on_recall.py").run("t")
    shown = tool_results(model)[0]
    assert f'File "<program>", line {line}' in shown, shown
    assert f"line {line + 1}" not in shown


def test_on_recall_compile_errors_name_the_files_own_line(workspace: Path) -> None:
    (workspace / "on_recall.py").write_text("print('fine')\nprint('broken'\n")
    model = ScriptedModel([call("recall", query="q"), call("finish", summary="done")])
    memory_agent(workspace, model, on_recall="on_recall.py").run("t")
    shown = tool_results(model)[0]
    assert "does not compile (line 2," in shown, shown
