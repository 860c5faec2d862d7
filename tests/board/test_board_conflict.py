"""Two issues editing the same file: the second merge conflicts; the merge agent resolves it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from board_support import gg_toml, git, job_of, make_repo, replies_so_far, show

import gg
from gg.board import Board, IssueState
from gg.testing import FunctionModel, call

COLORS = "red\ngreen\nblue\n"
RESOLVED = "red\nlime\nolive\nblue\n"


def conflict_model() -> tuple[FunctionModel, list[str]]:
    both_started = asyncio.Event()
    started: set[int] = set()
    merge_tasks: list[str] = []

    async def answer(messages: list[Any], tools: list[gg.ToolSpec]) -> gg.Reply:
        job, n = job_of(messages)
        k = replies_so_far(messages)
        if job == "implement":
            if k == 0:  # both branches exist before either issue can merge
                started.add(n)
                if len(started) == 2:
                    both_started.set()
                await both_started.wait()
                color = {1: "lime", 2: "olive"}[n]
                return call("write_file", path="colors.txt", content=f"red\n{color}\nblue\n")
            return call("finish", summary=f"green is now {'lime' if n == 1 else 'olive'}")
        if job == "review":
            return call("approve")
        task = messages[1].content
        if k == 0:
            merge_tasks.append(task)
        if "conflicts in these files" not in task:
            return call("finish", summary="clean merge")
        # conflicted: first try to finish with the markers still there (the guard blocks)
        return [
            call("finish", summary="merged"),
            call("write_file", path="colors.txt", content=RESOLVED),
            call("finish", summary="kept both colours"),
        ][k]

    return FunctionModel(answer), merge_tasks


def test_second_merge_conflicts_and_the_merge_agent_resolves_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", files={"colors.txt": COLORS}, toml=gg_toml(hook=False))
    model, merge_tasks = conflict_model()
    board = Board(repo, model=model, reviewers=1, concurrency=2)
    board.add("Make green lime")
    board.add("Make green olive")

    result = board.run()

    assert result.status == "ended", result.diagnosis
    assert [i.state for i in result.issues] == [IssueState.DONE, IssueState.DONE]
    assert show(repo, "main", "colors.txt") == RESOLVED.strip()
    # exactly one merge was clean and one conflicted on colors.txt
    assert len(merge_tasks) == 2
    assert sum("conflicts in these files:\n- colors.txt" in t for t in merge_tasks) == 1
    # the guard blocked the finish while the markers were still there
    events = list(gg.read_events(result.stream))
    blocked = [e for e in events if e.type == "gate_blocked"]
    assert len(blocked) == 1 and "conflict markers: colors.txt" in blocked[0].reason
    # both merge commits are on main, each recorded, one after the other
    shas = [i.merge_sha for i in result.issues]
    merges = git(repo, "rev-list", "--merges", "main").split()
    assert set(shas) == set(merges) and len(merges) == 2
    assert "<<<<<<<" not in (repo / "colors.txt").read_text()
