"""``[board] executor`` and ``ray_address`` (issue 17): the gg.toml twin of ``--ray ADDRESS``.

The defaults are the config model's; bad values are config errors naming the key;
``executor = "ray"`` takes ``gg board run`` to the Ray dispatch exactly as ``--ray``
does (the same refusals, before any cluster is touched), ``--ray`` wins over the file,
and a gg.toml that newly asks for Ray is a weakening setting.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
import typer
from board_support import gg_toml, git, make_repo
from typer.testing import CliRunner

import gg
from gg.board.cli import board_app
from gg.config import BoardSettings, settings_from_dict
from gg.errors import ConfigError
from gg.testing import ScriptedModel, call
from gg.trust import weakening

app = typer.Typer()
app.add_typer(board_app, name="board")


@app.callback()
def _root() -> None:
    """The gg command, as far as these tests need it."""


def run(repo: Path, *args: str, toml: Path | None = None) -> tuple[int, str]:
    extra = ["--config", str(toml)] if toml else []
    done = CliRunner().invoke(app, ["board", "run", "-w", str(repo), *extra, *args])
    return done.exit_code, " ".join((done.stderr + done.stdout).split())


def test_the_defaults_are_local_and_no_address() -> None:
    board = settings_from_dict({}).board
    assert (board.executor, board.ray_address) == ("local", None)
    assert board == BoardSettings()


@pytest.mark.parametrize(
    ("board", "key", "why"),
    [
        ({"executor": "dask"}, "board.executor", "'local' or 'ray'"),
        ({"executor": "ray"}, "board", "needs ray_address"),
        ({"ray_address": "http://head:8265"}, "board.ray_address", "not a Ray address"),
        ({"ray_address": "head; rm -rf /"}, "board.ray_address", "not a Ray address"),
        ({"ray_address": 10001}, "board.ray_address", ""),
    ],
)
def test_bad_executor_settings_are_config_errors(
    board: dict[str, object], key: str, why: str
) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_dict({"board": board})
    assert info.value.key == key, str(info.value)
    assert why in str(info.value)


@pytest.mark.parametrize("address", ["local", "head:6379", "ray://10.0.0.5:10001", "ray://head"])
def test_good_addresses_are_taken(address: str) -> None:
    board = settings_from_dict({"board": {"executor": "ray", "ray_address": address}}).board
    assert board.ray_address == address


def test_asking_for_ray_is_a_weakening_setting() -> None:
    lines = weakening(settings_from_dict({"board": {"executor": "ray", "ray_address": "h:1"}}))
    assert lines == ["[board] executor = 'ray': h:1"]


def test_executor_ray_in_gg_toml_dispatches_as_ray_does(tmp_path: Path, pg_url: str) -> None:
    repo = make_repo(tmp_path / "repo")
    toml = tmp_path / "ray.toml"
    toml.write_text(gg_toml(extra='\n[board]\nexecutor = "ray"\nray_address = "local"\n'))
    code, out = run(repo, toml=toml)
    assert code == 2 and "must be PostgreSQL" in out  # the dispatch's refusal, not a local run
    toml.write_text(
        gg_toml(extra=f'\n[board]\nstore = "{pg_url}"\nexecutor = "ray"\nray_address = "local"\n')
    )
    code, out = run(repo, toml=toml)
    assert code == 2 and "no remote 'origin'" in out
    assert git(repo, "branch", "--list", "gg/*") == ""  # nothing ran here


def test_an_unreachable_cluster_is_a_clear_error_and_ray_overrides_the_file(
    tmp_path: Path, pg_url: str
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    seed = make_repo(tmp_path / "seed")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git"))
    repo = tmp_path / "repo"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(repo))
    toml = tmp_path / "ray.toml"
    toml.write_text(
        gg_toml(
            extra=f'\n[board]\nstore = "{pg_url}"\nexecutor = "ray"\n'
            f'ray_address = "127.0.0.1:{port}"\n'
        )
    )
    code, out = run(repo, toml=toml)
    assert code == 2 and f"cannot reach the Ray cluster at '127.0.0.1:{port}'" in out
    code, out = run(repo, "--ray", f"ray://127.0.0.1:{port}", toml=toml)  # --ray wins
    assert code == 2 and f"cannot reach the Ray cluster at 'ray://127.0.0.1:{port}'" in out
    code, out = run(repo, "--ray", "http://x", toml=toml)
    assert code == 2 and "--ray: 'http://x' is not a Ray address" in out


def test_the_help_names_the_executor_key() -> None:
    done = CliRunner().invoke(app, ["board", "run", "--help"])
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", done.stdout).split())  # the help's box
    assert "board.executor and board.ray_address" in text and "--ray ADDRESS" in text


def test_a_gg_toml_that_newly_asks_for_ray_needs_trust_config(tmp_path: Path, pg_url: str) -> None:
    """The driver starts no run, yet the trust rule holds: the cluster is never reached."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    seed = make_repo(tmp_path / "seed")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git"))
    repo = tmp_path / "repo"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(repo))
    done = gg.Agent(model=ScriptedModel([call("finish", summary="ok")]), workspace=repo).run("x")
    assert done.run_id  # a run started: this gg.toml is now the workspace's approved one
    (repo / "gg.toml").write_text(  # as an agent's merged change could have left it
        gg_toml(
            extra=f'\n[board]\nstore = "{pg_url}"\nexecutor = "ray"\n'
            f'ray_address = "127.0.0.1:{port}"\n'
        )
    )
    code, out = run(repo)
    assert code == 2 and "--trust-config" in out and "[board] executor = 'ray'" in out, out
    assert "cannot reach" not in out  # refused before any cluster is touched
    code, out = run(repo, "--trust-config")
    assert code == 2 and f"cannot reach the Ray cluster at '127.0.0.1:{port}'" in out, out


def test_every_board_command_keeps_a_newly_named_store_under_the_trust_rule(
    tmp_path: Path, pg_url: str
) -> None:
    """``add``, ``list``, ``show``, ``retry``, ``reopen``: a changed gg.toml that newly names
    a PostgreSQL store is refused before anything is sent there (the issue's text, the
    libpq password); ``--trust-config`` lets it through."""
    repo = make_repo(tmp_path / "repo")
    done = gg.Agent(model=ScriptedModel([call("finish", summary="ok")]), workspace=repo).run("x")
    assert done.run_id  # a run started: this gg.toml is now the workspace's approved one
    (repo / "gg.toml").write_text(gg_toml(extra=f'\n[board]\nstore = "{pg_url}"\n'))

    def board(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, ["board", *args, "-w", str(repo)])
        return result.exit_code, " ".join((result.stderr + result.stdout).split())

    for args in (["add", "secret plan"], ["list"], ["show", "1"], ["retry", "1"], ["reopen", "1"]):
        code, out = board(*args)
        assert code == 2 and "--trust-config" in out and "[board] store" in out, (args, out)
    code, out = board("list", "--json", "--trust-config")
    assert code == 0 and out == "[]", out  # the refused add sent nothing to the server
    code, out = board("add", "planned", "--trust-config")
    assert code == 0 and "added #1" in out, out
