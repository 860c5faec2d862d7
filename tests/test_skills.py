"""Skills: SKILL.md folders, the system prompt's list, ``use_skill`` and on-use scripts
(SPEC T3, S13, issue 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gg
from gg.config import settings_from_dict
from gg.models.base import Message, ToolMessage, ToolSpec
from gg.skills import discover_skills, load_skill, parse_skill_md
from gg.state import state_path
from gg.testing import FunctionModel, ScriptedModel, call, text
from support import events_of

CAPS = ["files", "shell", "skills"]


@pytest.fixture(autouse=True)
def user_skills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user skills directory, so the real ~/.config/gg/skills never leaks in."""
    user = tmp_path / "user-skills"
    user.mkdir()
    monkeypatch.setenv("GG_SKILLS_DIR", str(user))
    return user


def make_skill(
    root: Path,
    folder: str,
    front: str,
    body: str = "Do it well.",
    script: tuple[str, str] | None = None,
) -> Path:
    d = root / folder
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n")
    if script is not None:
        (d / script[0]).write_text(script[1])
    return d


def skills_agent(workspace: Path, model: Any, *, mode: str = "tool-calling") -> gg.Agent:
    settings = settings_from_dict({"tools": {"capabilities": CAPS}, "session": {"mode": mode}})
    return gg.Agent(model=model, workspace=workspace, settings=settings)


# ---------------------------------------------------------------- SKILL.md


def test_parse_front_matter_and_body() -> None:
    fields, body = parse_skill_md(
        '---\nname: notes\ndescription: "Write release: notes"\n# a comment\n'
        "license: MIT\nlong: >\n  first part\n  second part\n---\n\n# Steps\n1. read\n",
        path=Path("SKILL.md"),
    )
    assert fields == {
        "name": "notes",
        "description": "Write release: notes",
        "license": "MIT",
        "long": "first part second part\n",  # YAML folds a block scalar
    }
    assert body == "# Steps\n1. read"


def test_load_skill_with_script(workspace: Path) -> None:
    d = make_skill(
        workspace / "skills",
        "release-notes",
        "name: release-notes\ndescription: Notes.\nversion: 2",
        script=("on_use.js", "console.log(1)"),
    )
    skill = load_skill(d)
    assert (skill.name, skill.description, skill.instructions) == (
        "release-notes",
        "Notes.",
        "Do it well.",
    )
    assert skill.script == d / "on_use.js" and skill.language == "javascript"
    assert skill.meta == {"version": 2}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("name: x\ndescription: y\n", "must start with a '---' line"),
        ("---\nname: x\ndescription: y\n", "never closed"),
        ("---\nname: x\nthis line has no colon\n---\n", "line 3: the front matter is not valid"),
        ("---\ndescription: y\n---\n", "has no 'name'"),
        ("---\nname: x\n---\n", "has no 'description'"),
        ("---\nname: 'two words'\ndescription: y\n---\n", "name 'two words' must be"),
        ("---\nname: x\nname: z\ndescription: y\n---\n", "'name' is given twice"),
        ("", "must start with a '---' line"),
    ],
)
def test_malformed_skill_is_a_user_error_naming_the_file(
    workspace: Path,
    content: str,
    problem: str,
) -> None:
    d = workspace / ".gg" / "skills" / "x"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(content)
    with pytest.raises(gg.UserError, match=problem) as info:
        load_skill(d)
    assert str(d / "SKILL.md") in str(info.value)
    # the agent refuses to start, before anything is written (exit 2 from the CLI)
    with pytest.raises(gg.UserError, match=problem):
        skills_agent(workspace, ScriptedModel([]))
    assert not (state_path(workspace) / "runs").exists()


def test_non_utf8_and_two_scripts_are_user_errors(workspace: Path) -> None:
    d = workspace / "skills" / "bin"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_bytes(b"---\nname: \xff\n---\n")
    with pytest.raises(gg.UserError, match="is not UTF-8") as info:
        load_skill(d)
    assert "SKILL.md" in str(info.value)
    d2 = make_skill(
        workspace / "skills", "two", "name: two\ndescription: d", script=("on_use.py", "print(1)")
    )
    (d2 / "on_use.js").write_text("console.log(1)")
    with pytest.raises(gg.UserError, match="at most one on-use script"):
        load_skill(d2)


def test_a_malformed_skill_does_not_matter_when_skills_are_not_chosen(workspace: Path) -> None:
    d = workspace / "skills" / "bad"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text("no front matter")
    result = gg.Agent(model=ScriptedModel([call("finish", summary="x")]), workspace=workspace).run(
        "t"
    )
    assert result.status == "ended"


def test_discovery_order_and_shadowing(workspace: Path, user_skills: Path) -> None:
    make_skill(workspace / ".gg" / "skills", "shared", "name: shared\ndescription: from .gg")
    make_skill(workspace / "skills", "shared", "name: shared\ndescription: from skills/")
    make_skill(workspace / "skills", "local", "name: local\ndescription: workspace only")
    make_skill(user_skills, "mine", "name: mine\ndescription: the user's")
    make_skill(user_skills, "local", "name: local\ndescription: hidden by the workspace's")
    (workspace / "skills" / "not-a-skill").mkdir()
    found = discover_skills(workspace)
    assert sorted(found) == ["local", "mine", "shared"]
    assert found["shared"].description == "from .gg"
    assert found["local"].description == "workspace only"
    make_skill(workspace / "skills", "f", "name: local\ndescription: again")
    with pytest.raises(gg.UserError, match="must be the skill's folder name, 'f'"):
        discover_skills(workspace)


# ---------------------------------------------------------------- prompt and use_skill


def test_system_prompt_lists_skills_and_use_skill_returns_instructions(
    workspace: Path,
) -> None:
    make_skill(
        workspace / "skills",
        "release-notes",
        "name: release-notes\ndescription: Write release notes\n  from the git log.",
        body="1. Read the log.\n2. Group by type.",
    )
    model = ScriptedModel(
        [
            call("use_skill", name="release-notes"),
            call("use_skill", name="x"),
            call("finish", summary="done"),
        ]
    )
    result = skills_agent(workspace, model).run("write notes")
    assert result.status == "ended"
    system = model.calls[0][0][0].content
    assert "## Skills" in system
    assert "- release-notes: Write release notes from the git log." in system
    assert "use_skill" in model.calls[0][1]
    used = model.calls[1][0][-1]
    assert isinstance(used, ToolMessage)
    assert used.content.startswith("# Skill: release-notes\n1. Read the log.\n2. Group by type.")
    assert "The skill's folder is skills/release-notes." in used.content
    unknown = model.calls[2][0][-1].content
    assert unknown == "Error: there is no skill named 'x'; the skills are: release-notes"


def test_no_skills_section_without_the_capability_or_without_skills(workspace: Path) -> None:
    model = ScriptedModel([call("finish", summary="x")])
    skills_agent(workspace, model).run("t")  # capability on, no skills: no section
    assert "## Skills" not in model.calls[0][0][0].content
    make_skill(workspace / "skills", "rn", "name: rn\ndescription: d")
    model = ScriptedModel([call("finish", summary="x")])
    gg.Agent(model=model, workspace=workspace).run("t")  # skills exist, capability off
    assert "## Skills" not in model.calls[0][0][0].content
    assert "use_skill" not in model.calls[0][1]


def test_subagents_see_the_skills_too(workspace: Path) -> None:
    make_skill(workspace / "skills", "rn", "name: rn\ndescription: the rn skill")
    prompts: dict[str, str] = {}

    def fn(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        task = messages[1].content
        prompts[task] = messages[0].content
        if task == "sub" or isinstance(messages[-1], ToolMessage):
            return call("finish", summary="ok")
        return call("spawn", task="sub")

    settings = settings_from_dict({"tools": {"capabilities": [*CAPS, "agents"]}})
    gg.Agent(model=FunctionModel(fn), workspace=workspace, settings=settings).run("root")
    assert "- rn: the rn skill" in prompts["root"] and "- rn: the rn skill" in prompts["sub"]


# ---------------------------------------------------------------- on-use scripts (sandbox)

FINISHING_SCRIPT = """\
print("checking the release branch")
try:
    gg.session.finish("the script says we are done")
except Exception as e:
    print("refused:", type(e).__name__)
print(gg.tools.read_file(path="README.md").strip())
"""


def test_on_use_script_cannot_end_the_session(workspace: Path) -> None:
    make_skill(
        workspace / "skills",
        "release",
        "name: release\ndescription: Cut a release.",
        body="Tag it.",
        script=("on_use.py", FINISHING_SCRIPT),
    )
    model = ScriptedModel([call("use_skill", name="release"), call("finish", summary="cut")])
    result = skills_agent(workspace, model).run("release it")
    assert result.status == "ended" and result.ending == gg.Finish(summary="cut")
    out = model.calls[1][0][-1].content
    assert out.startswith("# Skill: release\nTag it.\n\n## Where this skill lives\n")
    assert "\n\nOutput of the skill's on-use script:" in out
    assert "checking the release branch" in out and "refused: EndingRefused" in out
    assert "# demo" in out  # the script's SDK has the arm's tools
    evs = events_of(result)
    refused = [e for e in evs if e.type == "ending_refused"]
    assert len(refused) == 1
    assert refused[0].call == "finish" and refused[0].reason == "unavailable"
    assert "on-use scripts cannot end a session" in refused[0].message
    assert refused[0].session_id == "s1"
    # not the model's error: no error turn, no declaration from the script
    assert not [e for e in evs if e.type == "error_turn"]
    declared = [e for e in evs if e.type == "ending_declared"]
    assert [d.arguments for d in declared] == [{"summary": "cut"}]


def test_on_use_script_uncaught_refusal_and_code_mode(workspace: Path) -> None:
    make_skill(
        workspace / "skills",
        "s",
        "name: s\ndescription: d",
        body="",
        script=("on_use.py", "gg.session.approve()\n"),
    )
    program = "r = gg.tools.use_skill(name='s')\nprint(r)\ngg.session.finish('used it')"
    model = ScriptedModel([call("submit_program", program=program)])
    result = skills_agent(workspace, model, mode="code").run("use s")
    assert result.ending == gg.Finish(summary="used it"), result.diagnosis
    refused = [e for e in events_of(result) if e.type == "ending_refused"]
    assert [(e.call, e.reason) for e in refused] == [("approve", "unavailable")]


def test_on_use_script_in_javascript(workspace: Path) -> None:
    script = (
        "console.log('js ran');\n"
        "try { await gg.session.requestChanges(['x']); } "
        "catch (e) { console.log('refused'); }\n"
    )
    make_skill(
        workspace / "skills",
        "j",
        "name: j\ndescription: d",
        body="Body.",
        script=("on_use.js", script),
    )
    model = ScriptedModel([call("use_skill", name="j"), call("finish", summary="ok")])
    result = skills_agent(workspace, model).run("use j")
    out = model.calls[1][0][-1].content
    assert "js ran" in out and "refused" in out, out
    refused = [e for e in events_of(result) if e.type == "ending_refused"]
    assert [(e.call, e.reason) for e in refused] == [("request_changes", "unavailable")]


def test_on_use_script_that_does_not_compile_is_a_tool_error(workspace: Path) -> None:
    make_skill(
        workspace / "skills", "b", "name: b\ndescription: d", script=("on_use.py", "def broken(:\n")
    )
    model = ScriptedModel([call("use_skill", name="b"), text("hm"), call("finish", summary="ok")])
    result = skills_agent(workspace, model).run("use b")
    assert result.status == "ended"
    out = model.calls[1][0][-1].content
    assert out.startswith("Error: the skill's on-use script does not compile (line 1")
