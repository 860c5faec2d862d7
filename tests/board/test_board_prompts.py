"""Board sessions get the same whole system prompt as any session (issue 10 item 4)."""

from __future__ import annotations

from pathlib import Path

from board_support import GREET_FIXED, gg_toml, make_repo

from gg.board import Board, IssueState
from gg.testing import ScriptedModel, call

SKILL = "---\nname: greeting-style\ndescription: How greetings are worded here.\n---\nSay Hello.\n"
TOOLS = '\n[tools]\ncapabilities = ["files", "shell", "skills"]\n'


def test_board_implementer_reviewer_and_merge_prompts_carry_the_skills_section(
    tmp_path: Path,
) -> None:
    repo = make_repo(
        tmp_path / "repo",
        files={
            "greet.py": 'def greet(name):\n    return "hello " + name\n',
            "skills/greeting-style/SKILL.md": SKILL,
        },
        toml=gg_toml(hook=False, extra=TOOLS),
    )
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="greet says Hello."),
            call("approve"),
            call("finish", summary="Merged."),
        ]
    )
    board = Board(repo, model=model, reviewers=1, concurrency=1)
    board.add("Greet politely")
    result = board.run()
    model.assert_complete()
    assert result.status == "ended", result.diagnosis
    assert board.show(1).issue.state is IssueState.DONE
    prompts = [messages[0].content for messages, _ in model.calls]
    firsts = [prompts[0], prompts[2], prompts[3]]  # implementer, reviewer, merge agent
    for prompt in firsts:
        assert "## Skills\n" in prompt
        assert "- greeting-style: How greetings are worded here." in prompt
        assert "## Workspace" in prompt and "You are a subagent" not in prompt
    assert "approve()" in prompts[2] and "finish(summary)" in prompts[0]
    assert all("use_skill" in tools for _, tools in model.calls)


def test_board_prompts_have_no_skills_section_when_there_are_no_skills(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", toml=gg_toml(hook=False, extra=TOOLS))
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content=GREET_FIXED),
            call("finish", summary="done"),
            call("approve"),
            call("finish", summary="Merged."),
        ]
    )
    board = Board(repo, model=model, reviewers=1, concurrency=1)
    board.add("Greet politely")
    assert board.run().status == "ended"
    assert all("## Skills" not in messages[0].content for messages, _ in model.calls)
