"""``gg board add|list|show|retry|reopen|run|migrate`` (SPEC §10 CLI, B1-B5): thin.

Mounted by the main command with ``app.add_typer(board_app, name="board")``.

Exit codes (SPEC O3): ``run``: 0 when every issue on the board is done, 1
when any is stuck (taken by this run or already stuck before it) or left
for the next run (the reasons are printed, with ``gg board retry N`` for a
stuck one), 2 bad usage or configuration (a one-line message naming the
flag or key); a PostgreSQL store lost for good mid-run stops it with exit 1
and the diagnosis. ``add``, ``list``, ``show``, ``retry``, ``reopen``: 0, or 2 on
bad usage (an unknown issue number, an issue not in the right state).
``migrate``: 0 once copied, 2 on bad usage (a target board that has issues), 1
when the server cannot be reached.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

import gg
from gg.board.board import Board, BoardResult, issue_json
from gg.board.display import BoardDisplay, detail_view, issues_table
from gg.board.errors import BoardError
from gg.board.postgres import PostgresStore, StoreLost, is_postgres_url
from gg.board.raydispatch import WorkerFailed, dispatch, was_dispatched
from gg.board.sqlite import default_path
from gg.board.store import IssueDetail
from gg.cliopts import Commands, TrustConfig, out_console
from gg.config import RAY_ADDRESS
from gg.errors import DiskFull
from gg.terminal import inert, inert_json, line

__all__ = ["board_app"]

board_app = typer.Typer(
    cls=Commands,
    rich_markup_mode=None,
    name="board",
    help="A board of issues run through an implementer, reviewers and a merge agent, each "
    "on its own git branch and worktree (in .gg/worktrees/). The board's store lives in "
    "gg's state directory for the repository, outside it ($GG_STATE_HOME, default "
    "$XDG_STATE_HOME/gg or ~/.local/state/gg), where no agent can edit it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

Workspace = Annotated[
    Path,
    typer.Option(
        "--workspace",
        "-w",
        metavar="DIR",
        show_default=False,
        help="The repository's top level (default: current directory).",
    ),
]
Config = Annotated[
    Path | None, typer.Option(metavar="FILE", help="A gg.toml to use instead of the workspace's.")
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Dispatch on a Ray cluster (ray://HOST:10001, HOST:6379, or 'local'): "
        "--concurrency board runners as Ray tasks, each in its own clone of the 'origin' "
        "remote, on a PostgreSQL store (the 'ray' extra). Overrides gg.toml's "
        'board.executor and board.ray_address (executor = "ray" with ray_address = ADDRESS '
        "is the same as --ray ADDRESS).",
    ),
]


def _fail(message: str) -> typer.Exit:
    """Print a one-line error on stderr; return the exit-2 exception (SPEC O3).

    The message may quote agent text: it is shown inert (issue 9 item 8).
    """
    out_console(stderr=True, soft_wrap=True).print(
        line(("gg: error:", "red"), " ", " ".join(inert(message).split()))
    )
    return typer.Exit(2)


def _board(workspace: Path, config: Path | None, **kwargs: Any) -> Board:
    try:
        return Board(workspace, config=config, **kwargs)
    except gg.UserError as e:
        raise _fail(str(e)) from None


@board_app.command("add")
def add(
    title: Annotated[str, typer.Argument(metavar="TITLE", help="The issue's title (one line).")],
    body_file: Annotated[
        Path | None,
        typer.Option(
            "--body-file",
            metavar="FILE",
            help="A UTF-8 file with the issue's description ('-': stdin).",
        ),
    ] = None,
    workspace: Workspace = Path("."),
    config: Config = None,
    json_out: JsonOut = False,
    trust_config: TrustConfig = False,
) -> None:
    """Add an open issue to the board."""
    try:
        body = ""
        if body_file is not None:
            body = sys.stdin.read() if str(body_file) == "-" else body_file.read_text("utf-8")
        with _board(workspace, config, trust_config=trust_config) as board:
            issue = board.add(title, body)
    except OSError as e:
        raise _fail(f"--body-file: cannot read {str(body_file)!r}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        where = "stdin" if str(body_file) == "-" else repr(str(body_file))
        raise _fail(f"--body-file: {where} is not UTF-8 text (byte {e.start})") from None
    except gg.UserError as e:
        raise _fail(str(e)) from None
    if json_out:
        sys.stdout.write(inert_json(issue_json(issue)) + "\n")
    else:
        out_console().print(line(f"added #{issue.number}: {issue.title}"))


@board_app.command("list")
def list_(
    workspace: Workspace = Path("."),
    config: Config = None,
    json_out: JsonOut = False,
    trust_config: TrustConfig = False,
) -> None:
    """List the board's issues with their states."""
    with _board(workspace, config, trust_config=trust_config) as board:
        try:
            issues = board.list()
        except gg.UserError as e:
            raise _fail(str(e)) from None
    if json_out:
        sys.stdout.write(inert_json([issue_json(i) for i in issues]) + "\n")
    else:
        out_console().print(issues_table(issues))


def _detail_json(d: IssueDetail) -> dict[str, Any]:
    return {
        **issue_json(d.issue),
        "body": d.issue.body,
        "summary": d.issue.summary,
        "sessions": [dataclasses.asdict(s) for s in d.sessions],
        "verdicts": [{**dataclasses.asdict(v), "items": list(v.items)} for v in d.verdicts],
        "history": [
            {
                **dataclasses.asdict(h),
                "from_state": h.from_state and h.from_state.value,
                "to_state": h.to_state and h.to_state.value,
            }
            for h in d.history
        ],
    }


@board_app.command("show")
def show(
    number: Annotated[int, typer.Argument(metavar="N", help="The issue's number.")],
    workspace: Workspace = Path("."),
    config: Config = None,
    json_out: JsonOut = False,
    trust_config: TrustConfig = False,
) -> None:
    """Show issue N: its state, sessions, verdicts and history."""
    with _board(workspace, config, trust_config=trust_config) as board:
        try:
            detail = board.show(number)
        except gg.UserError as e:
            raise _fail(str(e)) from None
    if json_out:
        sys.stdout.write(inert_json(_detail_json(detail)) + "\n")
    else:
        out_console().print(detail_view(detail))


def _change(
    number: int, workspace: Path, config: Path | None, json_out: bool, verb: str, trust: bool
) -> None:
    """``retry`` / ``reopen``: move issue ``number`` back into the workflow."""
    with _board(workspace, config, trust_config=trust) as board:
        try:
            issue = board.retry(number) if verb == "retry" else board.reopen(number)
        except gg.UserError as e:
            raise _fail(str(e)) from None
    if json_out:
        sys.stdout.write(inert_json(issue_json(issue)) + "\n")
    else:
        out_console().print(
            line(f"#{issue.number} is {issue.state.value} again: gg board run takes it")
        )


@board_app.command("retry")
def retry(
    number: Annotated[int, typer.Argument(metavar="N", help="The stuck issue's number.")],
    workspace: Workspace = Path("."),
    config: Config = None,
    json_out: JsonOut = False,
    trust_config: TrustConfig = False,
) -> None:
    """Give stuck issue N another go, from the state it was stuck in.

    Stuck after board.max_rounds review rounds: one more implementing round
    with the reviewers' items. Stuck on a ceiling or a git refusal: the same
    state again, with fresh ceilings. Exit 2 if N is not stuck.
    """
    _change(number, workspace, config, json_out, "retry", trust_config)


@board_app.command("reopen")
def reopen(
    number: Annotated[int, typer.Argument(metavar="N", help="The done issue's number.")],
    workspace: Workspace = Path("."),
    config: Config = None,
    json_out: JsonOut = False,
    trust_config: TrustConfig = False,
) -> None:
    """Open done issue N again.

    The next run implements, reviews and merges it anew from the current base
    branch. Exit 2 if N is not done.
    """
    _change(number, workspace, config, json_out, "reopen", trust_config)


Concurrency = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        help="Issues worked on at once (default: board.concurrency); on Ray, the number "
        "of runners (Ray tasks), each working on one issue at a time.",
    ),
]
"""``gg board run --concurrency N``."""


@board_app.command("run", short_help="Run every unfinished issue to done or stuck.")
def run(
    concurrency: Concurrency = None,
    model: Annotated[
        str | None,
        typer.Option(
            metavar="SPEC",
            help="local | local:NAME | local:PATH | scripted:PATH | openai:MODEL | "
            "openai-responses:MODEL | anthropic:MODEL | openai-compat:MODEL@URL "
            "(default: [model] spec).",
        ),
    ] = None,
    workspace: Workspace = Path("."),
    config: Config = None,
    max_turns: Annotated[
        int | None,
        typer.Option(
            metavar="N", help="Override [ceilings] max_turns (model replies per session)."
        ),
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="Print one JSON result on stdout at the end (progress goes to stderr)."
        ),
    ] = False,
    trust_config: TrustConfig = False,
    ray_address: RayAddress = None,
) -> None:
    """Run every open or unfinished issue to done or stuck; resumes after a crash."""
    if concurrency is not None and concurrency < 1:
        raise _fail(f"--concurrency: must be at least 1, not {concurrency}")
    if ray_address is not None and not RAY_ADDRESS.fullmatch(ray_address):
        raise _fail(f"--ray: {ray_address!r} is not a Ray address (ray://HOST:PORT, HOST:PORT "
                    "or 'local')")  # fmt: skip
    console = out_console(stderr=json_out)
    display = BoardDisplay(console)
    board = _board(
        workspace,
        config,
        model=model,
        observers=[display],
        ceilings={"max_turns": max_turns} if max_turns is not None else None,
        progress=lambda say: console.print(line((say, "dim"))),
        trust_config=trust_config,
    )
    _maybe_dispatch(board, ray_address, concurrency, json_out, console)
    try:
        with board, display:
            result = board.run(concurrency=concurrency, signals=True)
    except gg.UserError as e:
        raise _fail(str(e)) from None
    except (gg.ModelError, DiskFull, StoreLost) as e:  # no model; a full disk; no store: exit 1
        raise _stopped_early(e, json_out=json_out) from None
    if json_out:
        sys.stdout.write(inert_json(result.to_json()) + "\n")
    else:
        _print_result(console, result)
    raise typer.Exit(result.exit_code)


def _maybe_dispatch(
    board: Board, address: str | None, workers: int | None, json_out: bool, console: Console
) -> None:
    """Dispatch (and exit) when ``--ray``, ``[board] executor = "ray"`` or the board asks.

    ``--ray ADDRESS`` wins over ``[board] ray_address``. A PostgreSQL board that Ray
    workers ran before is finished by the same workers in this process, never in this
    checkout (its branches and merges are on ``origin``). Returns for a local run.
    """
    settings = board.settings.board
    if address is None and settings.executor == "ray":
        address = settings.ray_address
    if address is None:
        if not _was_dispatched(board):
            return
        console.print(
            line(
                (
                    "this board was run on Ray (its branches and merges are on 'origin'): "
                    "its workers run in this process, each in its own clone",
                    "dim",
                )
            )
        )
    _run_on_ray(board, address, workers, json_out)


def _was_dispatched(board: Board) -> bool:
    """:func:`gg.board.raydispatch.was_dispatched`, a store that cannot be read as exit 2."""
    try:
        return was_dispatched(board)
    except gg.UserError as e:
        board.close()
        raise _fail(str(e)) from None


def _run_on_ray(board: Board, address: str | None, workers: int | None, json_out: bool) -> None:
    """``gg board run --ray ADDRESS`` (or ``[board] executor = "ray"``): dispatch; exit 0 or 1.

    :func:`gg.board.raydispatch.dispatch`, ``--concurrency`` (default ``[board]
    concurrency``) workers.
    """
    try:
        with board:
            result = dispatch(
                board, address=address, workers=workers or board.settings.board.concurrency
            )
    except gg.UserError as e:
        raise _fail(str(e)) from None
    except (gg.GGError, WorkerFailed) as e:
        out_console(stderr=True, soft_wrap=True).print(line(("stopped:", "red"), f" {e}"))
        raise typer.Exit(1) from None
    if json_out:
        issues = [issue_json(i) for i in result.issues]
        out = {
            "dispatch_id": result.dispatch_id,
            "index": str(result.index),
            "lost": list(result.lost),
            "issues": issues,
        }
        sys.stdout.write(inert_json(out) + "\n")
    else:
        console = out_console(soft_wrap=True)
        console.print(issues_table(list(result.issues)))
        for lost in result.lost:
            console.print(line(("lost ", "yellow"), lost))
        console.print(
            line((f"{len(result.workers)} worker run(s); gg show {result.dispatch_id}", "dim"))
        )
    raise typer.Exit(result.exit_code)


def _stopped_early(error: gg.ModelError | DiskFull | StoreLost, *, json_out: bool) -> typer.Exit:
    """One line on stderr for a model that could not be set up, a full disk, a lost store; exit 1.

    A full disk or a lost PostgreSQL store stopped the run, its diagnosis naming the
    disk or the server; ``--json`` gets it too.
    """
    console = out_console(stderr=True, soft_wrap=True)
    if isinstance(error, DiskFull | StoreLost):
        console.print(line(("stopped:", "red"), f" {error}"))
        if json_out:
            sys.stdout.write(inert_json({"status": "stopped", "diagnosis": str(error)}) + "\n")
    else:  # the model could not even be set up (e.g. not installed)
        console.print(line(("gg: model failed:", "red"), f" {error}"))
    return typer.Exit(1)


def _print_result(console: Console, result: BoardResult) -> None:
    """The board run's outcome: every value shown inert (issue 9 item 8, issue 12)."""
    if result.issues:
        console.print(issues_table(list(result.issues)))
    else:
        console.print(line(("this run had no issue to take", "dim")))
    if result.diagnosis:
        console.print(line(("not all done:", "bold red"), f" {result.diagnosis}"))
    elif result.issues:
        taken = len(result.issues)
        board = max(result.on_board, taken)
        console.print(line((f"all {board} issue(s) on the board are done", "bold green"),
                           (f" ({taken} by this run)", "dim")))  # fmt: skip
    elif result.on_board:
        console.print(line((f"all {result.on_board} issue(s) on the board are done", "bold green")))
    else:
        console.print(line("the board has no issues yet: add one with gg board add TITLE"))
    console.print(line((f"stream: {result.stream}  (replay: gg show {result.run_id})", "dim")))


@board_app.command("migrate", short_help="Copy the SQLite board into an empty PostgreSQL one.")
def migrate(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="URI",
            help="The PostgreSQL URI: postgresql://USER@HOST:PORT/DB[?board=NAME].",
        ),
    ],
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="STORE",
            help="The SQLite store: 'sqlite' (default file) or 'sqlite:PATH'.",
        ),
    ] = None,
    workspace: Workspace = Path("."),
    config: Config = None,
    json_out: JsonOut = False,
    trust_config: TrustConfig = False,
) -> None:
    """Copy this workspace's SQLite board into an empty PostgreSQL board.

    Every issue with its sessions, verdicts and history is copied in one
    transaction; the SQLite file is left as it was. Then set [board] store to
    the URI in gg.toml (or --config) so that runs use it.
    """
    if not is_postgres_url(to):
        raise _fail(f"--to: {to!r} is not a postgresql:// URI")
    with _board(workspace, config, trust_config=trust_config) as board:
        setting = board.settings.board.store
        spec = source or (setting if setting.startswith("sqlite") else "sqlite")
        path = _sqlite_path(spec, board.workspace)
    try:
        store = PostgresStore(to)
        try:
            copied = store.copy_from_sqlite(path)
        finally:
            store.close()
    except gg.UserError as e:
        raise _fail(str(e)) from None
    except BoardError as e:
        out_console(stderr=True, soft_wrap=True).print(
            line(("gg: migrate failed:", "red"), f" {e}")
        )
        raise typer.Exit(1) from None
    if json_out:
        sys.stdout.write(inert_json({"copied": copied, "from": str(path), "to": store.url}) + "\n")
        return
    out_console(soft_wrap=True).print(
        line(
            f"copied {copied} issue(s) from {path} into {store.url} (board "
            f"{store.board_name!r}); to use it: [board] store = {store.url!r} in gg.toml"
        )
    )


def _sqlite_path(spec: str, workspace: Path) -> Path:
    """The SQLite file ``spec`` names (``sqlite`` or ``sqlite:PATH``); it must exist."""
    if spec == "sqlite":
        path = default_path(workspace)
    elif spec.startswith("sqlite:"):
        path = Path(spec.removeprefix("sqlite:")).expanduser()
        path = path if path.is_absolute() else workspace / path
    else:
        raise _fail(f"--from: {spec!r} is not a SQLite store ('sqlite' or 'sqlite:PATH')")
    if not path.is_file():
        raise _fail(f"--from: no SQLite board at {str(path)!r}")
    return path
