"""The driver trusts no more of a shipped part than it must (issue 17; SPEC O1).

Real parts: a real gg run's sealed stream (a scripted model), shipped as a worker
ships it. A part's slot is its job's, its run id is checked before it names a
directory, and a part whose text holds U+2028/U+2029/U+0085 merges whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.board import merged as merged_module
from gg.board.merged import Part, merge
from gg.board.raydispatch import WorkerJob, WorkerReport, parts_of
from gg.seal import HEAD_NAME, KEY_NAME, verify
from gg.state import private_dir
from gg.testing import ScriptedModel, call

ODD = "one\u2028two\u2029three\u0085four\r\nfive"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A finished run's directory: its model text holds line separators of every kind."""
    ws = tmp_path / "ws"
    ws.mkdir()
    model = ScriptedModel(
        [call("write_file", path="a.txt", content=ODD), call("finish", summary=ODD)]
    )
    result = gg.Agent(model=model, workspace=ws).run(f"write {ODD}")
    assert result.status == "ended"
    return result.stream.parent


def part_of(run: Path, *, slot: int = 1, run_id: str | None = None) -> Part:
    return Part(
        slot=slot,
        run_id=run.name if run_id is None else run_id,
        stream=(run / "stream.jsonl").read_text(encoding="utf-8"),
        seal={name: (run / name).read_text() for name in (KEY_NAME, HEAD_NAME)},
    )


def merged(tmp_path: Path, parts: list[Part]) -> tuple[Path, dict[str, Any]]:
    folder = private_dir(tmp_path / "state" / "runs" / "ray-test")
    index = merge(
        folder, dispatch_id="ray-test", parts=parts, workspace=tmp_path, settings={}, done=True
    )
    return folder, json.loads(index.read_text())


def test_a_part_with_unicode_line_separators_merges_whole(run: Path, tmp_path: Path) -> None:
    assert "\u2028" in (run / "stream.jsonl").read_text(encoding="utf-8")  # written unescaped
    folder, index = merged(tmp_path, [part_of(run)])
    (entry,) = index["workers"]
    assert entry["verdict"] == "intact", entry
    assert "not who wrote it" in index["part_seals"]  # the index says what 'intact' proves
    lines = (folder / "stream.jsonl").read_text(encoding="utf-8").split("\n")
    events = [json.loads(line) for line in lines if line]
    declared = [e for e in events if e["type"] == "ending_declared"]
    assert declared and declared[0]["arguments"]["summary"] == ODD
    assert events[-1]["type"] == "run_ended" and events[-1]["status"] == "ended"
    assert verify(folder / "stream.jsonl", seal_dir=folder).kind == "intact"


def test_a_line_that_is_no_event_names_the_part_damaged() -> None:
    _events = merged_module._events
    events, fault = _events('{"type": "nope"}\n', 1)
    assert events == [] and fault is not None and "line 1" in fault
    events, fault = _events("not json\u2028\n", 5)
    assert events == [] and fault is not None


def test_a_run_id_that_is_a_path_is_refused_and_writes_nothing_outside(
    run: Path, tmp_path: Path
) -> None:
    for bad in ("x/../../../escaped", "../escaped", "/abs", ".hidden", "a\nb", ""):
        folder, index = merged(tmp_path / bad.replace("/", "_"), [part_of(run, run_id=bad)])
        (entry,) = index["workers"]
        assert entry["verdict"] == "refused" and "not a run id" in entry["message"]
        assert entry["part"] is None and entry["events"] == 0
        assert not (folder / "parts").exists()
        last = json.loads((folder / "stream.jsonl").read_text().strip().split("\n")[-1])
        assert last["status"] == "stopped" and "not a run id" in last["diagnosis"]
    assert not list(tmp_path.rglob("escaped"))


def test_two_parts_claiming_one_slot_are_both_refused(run: Path, tmp_path: Path) -> None:
    folder, index = merged(
        tmp_path, [part_of(run, run_id="runA"), part_of(run, run_id="runB"), part_of(run, slot=2)]
    )
    verdicts = [(e["slot"], e["verdict"]) for e in index["workers"]]
    assert verdicts == [(1, "refused"), (1, "refused"), (2, "intact")]
    events = [
        json.loads(line) for line in (folder / "stream.jsonl").read_text().split("\n") if line
    ]
    ids = {e.get("session_id") for e in events if e["type"] == "session_started"}
    assert ids and all(i.startswith("w2.") for i in ids)
    assert events[-1]["status"] == "stopped"


def test_a_part_takes_the_slot_of_the_job_the_driver_made(run: Path) -> None:
    def report(slot: int) -> WorkerReport:
        p = part_of(run)
        return WorkerReport(slot=slot, host="h", pid=1, run_id=p.run_id, status="ended",
                            exit_code=0, issues=(1,), stream=p.stream, seal=p.seal)  # fmt: skip

    def job(slot: int) -> WorkerJob:
        return WorkerJob(slot=slot, remote="/r", store="postgresql://x", base_branch="main",
                         model="openai:x")  # fmt: skip

    parts = parts_of([(job(1), report(1)), (job(2), report(1))])  # worker 2 claims slot 1
    assert [p.slot for p in parts] == [1, 2]
    assert parts[1].meta["reported_slot"] == 1 and "reported_slot" not in parts[0].meta
