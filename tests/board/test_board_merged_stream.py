"""A Ray-dispatched run is one ordered, sealed record (issue 17): shown, verified, tamper-evident.

One real dispatch (two Ray workers, five issues) is made for the module; each test
works on a copy of its run directory, so ``gg show COPY`` finds the copy's own seal.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from board_support import git
from ray_support import check_index, ray_board, run_case
from typer.testing import CliRunner

from gg.board.merged import Part, merge
from gg.cli import app
from gg.seal import HEAD_NAME, KEY_NAME, verify
from gg.state import private_dir
from pgcluster import PgCluster


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One gg state directory for the module (the dispatch's run is in it)."""
    home = tmp_path_factory.mktemp("gg-state-merged")
    home.chmod(0o700)
    return home


@pytest.fixture(autouse=True)
def _state_home(module_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test of the module sees the module's gg state (overrides the conftest's)."""
    monkeypatch.setenv("GG_STATE_HOME", str(module_home))
    return module_home


@pytest.fixture(scope="module")
def dispatched(
    tmp_path_factory: pytest.TempPathFactory, pg: PgCluster, module_home: Path
) -> tuple[Path, Path, Path]:
    """A finished dispatch: the driver's workspace, the dispatch's run directory, its config."""
    tmp_path = tmp_path_factory.mktemp("dispatch")
    _, workspace, toml = ray_board(tmp_path, pg, pg.new_database())
    proc = run_case(tmp_path, workspace, toml, GG_STATE_HOME=str(module_home))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]
    index = Path(json.loads((tmp_path / "out.json").read_text())["index"])
    check_index(index, killed=False)
    return workspace, index.parent, toml


def copy_of(folder: Path, name: str) -> Path:
    """The run directory copied beside it as ``name`` (gg-private, its seal with it)."""
    target = folder.parent / name
    shutil.copytree(folder, target)
    private_dir(target)
    return target


def show(workspace: Path, run: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["show", run, "-w", str(workspace)])
    return done.exit_code, " ".join(done.stdout.split())


def test_gg_show_replays_the_dispatch_as_one_verified_stream(
    dispatched: tuple[Path, Path, Path],
) -> None:
    workspace, folder, _ = dispatched
    code, out = show(workspace, folder.name)
    assert code == 0, out
    assert "stream intact" in out
    assert "w1.s" in out and "w2.s" in out  # both workers' sessions, in one record
    events = [json.loads(line) for line in (folder / "stream.jsonl").read_text().splitlines()]
    ats = [e["at"] for e in events[1:-1]]
    assert ats == sorted(ats)  # one time order across the workers


@pytest.mark.parametrize("how", ["edit", "remove", "swap", "cut_end"])
def test_a_tampered_merged_stream_is_named(dispatched: tuple[Path, Path, Path], how: str) -> None:
    workspace, folder, _ = dispatched
    copy = copy_of(folder, f"tampered-{how}")
    path = copy / "stream.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    at = len(lines) // 2
    if how == "edit":
        lines[at] = lines[at].replace('"at":"', '"at":"1', 1)
    elif how == "remove":
        del lines[at]
    elif how == "swap":
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    else:
        del lines[-1]
    path.write_text("".join(lines))
    assert verify(path, seal_dir=copy).kind in ("altered", "truncated")
    code, out = show(workspace, copy.name)
    assert code != 0
    if how == "cut_end":
        assert "truncated" in out.lower() or "cut" in out.lower(), out[-500:]
    else:
        assert f"event {at + 1}" in out or f"line {at + 1}" in out, out[-500:]


def parts_of(folder: Path) -> list[Part]:
    """The dispatch's parts as the workers shipped them."""
    index = json.loads((folder / "index.json").read_text())
    out = []
    for w in index["workers"]:
        where = folder / w["part"]
        seal = {n: (where / n).read_text() for n in (KEY_NAME, HEAD_NAME)}
        stream = (where / "stream.jsonl").read_text()
        out.append(Part(slot=w["slot"], run_id=w["run_id"], stream=stream, seal=seal))
    return out


def remerge(
    folder: Path, parts: list[Part], name: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Merge ``parts`` anew into ``<runs>/name``; its index and merged events."""
    target = private_dir(folder.parent / name)
    index = merge(target, dispatch_id=name, parts=parts, workspace=folder, settings={}, done=True)
    events = [json.loads(x) for x in (target / "stream.jsonl").read_text().splitlines()]
    return json.loads(index.read_text()), events


@pytest.mark.parametrize("how", ["edit", "reorder", "no_key", "other_key"])
def test_a_tampered_part_is_found_named_and_left_out(
    dispatched: tuple[Path, Path, Path], how: str
) -> None:
    _, folder, _ = dispatched
    parts = parts_of(folder)
    good, bad = parts
    lines = bad.stream.splitlines(keepends=True)
    if how == "edit":
        lines[2] = lines[2].replace('"at":"', '"at":"0', 1)
    elif how == "reorder":
        lines[2], lines[3] = lines[3], lines[2]
    seal = dict(bad.seal)
    if how == "no_key":
        del seal[KEY_NAME]
    elif how == "other_key":
        seal[KEY_NAME] = good.seal[KEY_NAME]
    tampered = Part(slot=bad.slot, run_id=bad.run_id, stream="".join(lines), seal=seal)
    index, events = remerge(folder, [good, tampered], f"remerged-{how}")
    verdicts = {w["slot"]: w["verdict"] for w in index["workers"]}
    assert verdicts[good.slot] == "intact"
    assert verdicts[bad.slot] == ("unkeyed" if how == "no_key" else "altered")
    end = events[-1]
    assert end["type"] == "run_ended" and end["status"] == "stopped"
    assert f"worker {bad.slot} ({bad.run_id})" in end["diagnosis"]
    prefix = f"w{bad.slot}."
    if how in ("edit", "reorder"):  # what came before the damage is kept, nothing after
        kept = [e for e in events if str(e.get("session_id", "")).startswith(prefix)]
        assert len(kept) <= 2
    else:
        assert not [e for e in events if str(e.get("session_id", "")).startswith(prefix)]


def test_parts_merged_again_in_another_order_give_the_same_record(
    dispatched: tuple[Path, Path, Path],
) -> None:
    _, folder, _ = dispatched
    parts = parts_of(folder)
    _, first = remerge(folder, parts, "order-a")
    _, second = remerge(folder, parts[::-1], "order-b")
    strip = ("seq", "chain", "nonce", "run_id", "pid", "at")
    body = [{k: v for k, v in e.items() if k not in strip} for e in first[1:-1]]
    again = [{k: v for k, v in e.items() if k not in strip} for e in second[1:-1]]
    assert sorted(map(json.dumps, body)) == sorted(map(json.dumps, again))
    assert [e["at"] for e in first[1:-1]] == [e["at"] for e in second[1:-1]]


def test_gg_board_run_without_ray_on_a_dispatched_board_runs_its_workers_here(
    dispatched: tuple[Path, Path, Path],
) -> None:
    workspace, folder, toml = dispatched
    tree = git(workspace, "rev-parse", "main^{tree}")
    done = CliRunner().invoke(
        app, ["board", "run", "-w", str(workspace), "--config", str(toml), "--json"]
    )
    assert done.exit_code == 0, done.stderr
    assert "this board was run on Ray" in " ".join(done.stderr.split())
    out = json.loads(done.stdout)
    assert [i["state"] for i in out["issues"]] == ["done"] * 5
    assert out["dispatch_id"] != folder.name and out["lost"] == []
    assert git(workspace, "rev-parse", "main^{tree}") == tree  # nothing merged in this checkout
    assert git(workspace, "branch", "--list", "gg/*") == ""
    check_index(Path(out["index"]), killed=True)  # its own merged record (nothing to do)
