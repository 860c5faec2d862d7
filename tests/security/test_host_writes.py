"""Files gg writes or reads in a hostile workspace: --record, gg init, gg.toml (issue 9)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import gg
from gg.testing import ScriptedModel, call


def test_record_replaces_planted_symlinks_and_ignores_a_swapped_directory(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.txt"
    target.write_text("untouched")
    rec_dir = ws / "rec"
    rec_dir.mkdir()
    record = rec_dir / "run.json"
    os.symlink(target, record)  # planted: the final name points out
    os.symlink(target, rec_dir / "run.json.tmp")  # planted: the old temp name points out

    class Swapper(ScriptedModel):
        async def respond(self, messages, tools):  # type: ignore[no-untyped-def]
            reply = await super().respond(messages, tools)
            if len(self.calls) == 1:  # after the first reply: swap the directory for a link
                os.rename(rec_dir, ws / "rec-moved")
                os.symlink(outside, rec_dir)
            return reply

    model = Swapper([call("list_dir", path="."), call("finish", summary="done")])
    result = gg.Agent(model=model, workspace=ws, record=record).run("list, then finish")
    assert result.status == "ended"
    assert target.read_text() == "untouched"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    written = ws / "rec-moved" / "run.json"
    assert not written.is_symlink()
    replies = json.loads(written.read_text())["replies"]
    assert [r["tool_calls"][0]["name"] for r in replies] == ["list_dir", "finish"]


def test_gg_init_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gg.cli import app

    ws = tmp_path / "ws"
    ws.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    os.symlink(victim, ws / "gg.toml")
    refused = CliRunner().invoke(app, ["init", "-w", str(ws)])
    assert refused.exit_code == 2, refused.output
    forced = CliRunner().invoke(app, ["init", "-w", str(ws), "--force"])
    assert forced.exit_code == 0, forced.output
    assert victim.read_text() == "untouched"
    assert not (ws / "gg.toml").is_symlink() and "[ceilings]" in (ws / "gg.toml").read_text()


def test_workspace_config_that_is_a_fifo_or_link_is_an_error_not_a_hang(tmp_path: Path) -> None:
    from gg.config import load_settings
    from gg.errors import ConfigError

    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "gg.toml")
    for _ in range(2):
        try:
            load_settings(workspace=ws)
        except ConfigError as e:
            assert "regular file" in str(e) or "symbolic link" in str(e)
        else:
            raise AssertionError("a FIFO gg.toml was accepted")
        os.unlink(ws / "gg.toml")
        os.symlink("/etc/passwd", ws / "gg.toml")


def test_record_into_a_workspace_dir_an_agent_made_a_link_is_refused(tmp_path: Path) -> None:
    from gg.errors import UserError

    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "records")  # planted by an earlier run's agent
    model = ScriptedModel([call("finish", summary="done")])
    try:
        gg.Agent(model=model, workspace=ws, record=ws / "records" / "rec.json")
    except UserError as e:
        assert "--record" in str(e)
    else:
        raise AssertionError("a record path through a link leaving the workspace was accepted")
    assert list(outside.iterdir()) == []
    inside = ws / "real"
    inside.mkdir()
    os.symlink("real", ws / "alias")  # a link that stays inside is fine
    result = gg.Agent(
        model=ScriptedModel([call("finish", summary="done")]),
        workspace=ws,
        record=ws / "alias" / "rec.json",
    ).run("finish")
    assert result.status == "ended" and (inside / "rec.json").is_file()


def test_a_state_home_inside_the_workspace_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gg.state import StateError

    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("GG_STATE_HOME", str(ws / ".local" / "state" / "gg"))  # as with -w ~
    with pytest.raises(StateError, match="inside the workspace"):
        gg.Agent(model=ScriptedModel([call("finish", summary="x")]), workspace=ws).run("t")
    assert not (ws / ".local").exists()
