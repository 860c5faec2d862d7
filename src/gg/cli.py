"""The ``gg`` command (SPEC O2, O3, §10 CLI). Thin: parses, calls the API, renders.

Exit codes (SPEC O3): 0 a session ended by an ending; 1 stopped by a ceiling or
a model failure or a full disk (diagnosis printed); 2 bad usage or configuration
(the message names the flag or key, and nothing is written); ``128 + signal``
when SIGINT (130), SIGTERM (143) or SIGHUP (129) stopped the run cleanly
(:mod:`gg.signals`; ``gg resume`` continues it, :mod:`gg.resume`). ``gg show`` and ``gg watch``
verify the stream's seal first (issue 9 item 3): 3 the stream was altered or
truncated (only the events before the damage are shown); 4 it cannot be
verified (no key for the run in gg's state on this machine).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import secrets
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.text import Text

import gg
from gg.agent import Agent, RunResult
from gg.board.cli import board_app
from gg.cliopts import Commands, TrustConfig, out_console, quiet_broken_pipe
from gg.config import CONFIG_NAME, default_toml
from gg.disk import is_disk_full
from gg.errors import DiskFull, ModelUnavailable, UserError
from gg.eval.cli import eval_command
from gg.models.factory import validate_spec
from gg.render import Renderer, summary_table
from gg.resume import ResumeRefused, load_resume_point, resume_run
from gg.seal import Checker, StreamAltered, Verdict
from gg.state import RUN_ID_PATTERN, StateError, existing_state, state_path, warn_legacy
from gg.stream import Event, read_events
from gg.terminal import inert, inert_json, inert_text, line
from gg.text import redact

__all__ = ["app", "main"]

app = typer.Typer(
    cls=Commands,
    name="gg",
    help="gg drives LLM agents through sessions that end only by an explicit, typed ending "
    "call: finish(summary) for work, approve() / request_changes(items) for reviews.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


DISTRIBUTION = "gg-agent"
"""gg's distribution name (``pip install gg-agent``); the import package and command are ``gg``."""


def _version() -> str:
    """The installed distribution's version (package metadata), else the source tree's."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return f"{gg.__version__} (not installed)"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"gg {_version()}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print gg's version (from the package metadata) and exit.",
            is_eager=True,
            callback=_show_version,
        ),
    ] = False,
) -> None:
    """Options of gg itself, before any command."""


app.add_typer(
    board_app, name="board", short_help="A board of issues: implementer, reviewers, merge agent."
)
app.command("eval", short_help="Run the eval suite and print its figures per configuration.")(
    eval_command
)


def _fail(message: str) -> typer.Exit:
    """Print a one-line error on stderr; return the exit-2 exception (SPEC O3).

    The message may quote agent text (a path, a stream line): it is shown inert
    (issue 9 item 8).
    """
    out_console(stderr=True, soft_wrap=True).print(_error_line(message))
    return typer.Exit(2)


def _error_line(message: str) -> Text:
    return line(("gg: error:", "red"), " ", " ".join(inert(message).split()))


Mode = Literal["tool-calling", "code"]


_Task = Annotated[
    str, typer.Argument(metavar="TASK", help="What the agent should do, as one argument.")
]
_WorkspaceDir = Annotated[
    Path,
    typer.Option(
        "--workspace",
        "-w",
        metavar="DIR",
        show_default=False,
        help="Directory the agent works in (default: current).",
    ),
]
_RunWorkspace = Annotated[
    Path,
    typer.Option(
        "--workspace",
        "-w",
        metavar="DIR",
        show_default=False,
        help="The workspace whose runs RUN_ID names (default: current directory).",
    ),
]
_RunRef = Annotated[
    str,
    typer.Argument(
        metavar="RUN_ID|STREAM_PATH",
        help="A run id of the workspace (YYYYMMDD-HHMMSS-XXXXXX, as gg run prints it), "
        "or the path of a stream.jsonl.",
    ),
]
_ModelSpec = Annotated[
    str | None,
    typer.Option(
        metavar="SPEC",
        help="local | local:NAME | local:PATH | scripted:PATH | openai:MODEL | "
        "openai-responses:MODEL | anthropic:MODEL | openai-compat:MODEL@URL "
        "(default: [model] spec, 'local').",
    ),
]
_Mode = Annotated[str | None, typer.Option(metavar="MODE", help="tool-calling | code")]
_Language = Annotated[
    str | None, typer.Option(metavar="LANGUAGE", help="python | javascript (code mode)")
]
_RoleName = Annotated[
    str | None,
    typer.Option(
        metavar="ROLE", help="standard (ends with finish) | review (approve / request_changes)"
    ),
]
_ConfigFile = Annotated[
    Path | None, typer.Option(metavar="FILE", help="A gg.toml to use instead of the workspace's.")
]
_JsonOut = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON result object on stdout at the end (live view goes to stderr).",
    ),
]
_Record = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Write the model's replies to FILE in the scripted format, to replay the run.",
    ),
]
_MaxTurns = Annotated[
    int | None,
    typer.Option(metavar="N", help="Override [ceilings] max_turns (model replies per session)."),
]
_NoGrammar = Annotated[
    bool, typer.Option("--no-grammar", help="Local model: don't constrain output to valid calls.")
]


@app.command(short_help="Run TASK in one session until an ending call ends it.")
def run(
    task: _Task,
    workspace: _WorkspaceDir = Path("."),
    model: _ModelSpec = None,
    mode: _Mode = None,
    language: _Language = None,
    role: _RoleName = None,
    config: _ConfigFile = None,
    json_out: _JsonOut = False,
    record: _Record = None,
    max_turns: _MaxTurns = None,
    no_grammar: _NoGrammar = False,
    trust_config: TrustConfig = False,
) -> None:
    """Run TASK in one session until it ends by an ending call, or a ceiling stops it.

    The session ends only by finish(summary) (role standard) or approve() /
    request_changes(items) (role review), after the agent-stop hooks pass.
    Turns stream live; the stream is written to gg's state directory for WORKSPACE,
    outside it: $GG_STATE_HOME/workspaces/NAME-HASH/runs/RUN_ID/stream.jsonl
    ($GG_STATE_HOME defaults to $XDG_STATE_HOME/gg, else ~/.local/state/gg). gg
    keeps none of its own state in WORKSPACE; the agent's tools change its files.

    Exit codes: 0 ended by an ending; 1 stopped by a ceiling or a model failure
    (diagnosis printed, a full disk included); 2 bad usage or configuration
    (nothing written); 130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP: the run
    is stopped cleanly, run_ended and --json are written (continue it with gg resume).

    Example (on a copy: the agent edits the files it is given):
    cp -r examples/tiny-calc /tmp/calc && gg run "Fix the failing test" -w /tmp/calc
    """
    _check_flags(mode=mode, language=language, role=role, max_turns=max_turns, model=model)
    console = out_console(stderr=json_out)
    renderer = Renderer(console, spinner=True)
    try:
        agent = Agent(
            model=model,
            workspace=workspace,
            config=config,
            role=role,
            mode=mode,
            language=language,  # type: ignore[arg-type]
            ceilings={"max_turns": max_turns} if max_turns is not None else None,
            listeners=[renderer],
            record=record,
            constrained=False if no_grammar else None,
            progress=lambda say: console.print(inert_text(say, "dim")),
            on_delta=renderer.delta,
            trust_config=trust_config,
        )
        result = agent.run(task, signals=True)
    except UserError as e:
        raise _fail(str(e)) from None
    except ModelUnavailable as e:  # e.g. a missing API key: configuration, before any run
        raise _fail(f"--model: {e}") from None
    except Exception as e:  # a full disk before the run could start: no stream to end
        raise _disk_full_at_start(e, json_out=json_out) from e
    _report(console, result, json_out=json_out)


def _check_flags(
    *,
    mode: str | None,
    language: str | None,
    role: str | None,
    max_turns: int | None,
    model: str | None,
) -> None:
    """Check ``gg run``'s flags before anything is built (SPEC O3).

    Raises:
        typer.Exit: exit 2 with a one-line message naming the flag.
    """
    for flag, value, allowed in (
        ("--mode", mode, ("tool-calling", "code")),
        ("--language", language, ("python", "javascript")),
        ("--role", role, ("standard", "review")),
    ):
        if value is not None and value not in allowed:
            raise _fail(f"{flag}: {value!r} is not one of {', '.join(allowed)}")
    if max_turns is not None and max_turns < 1:
        raise _fail(f"--max-turns: {max_turns} must be at least 1")
    if model is not None:
        try:
            validate_spec(model)
        except UserError as e:
            raise _fail(f"--model: {e}") from None


def _disk_full_at_start(error: Exception, *, json_out: bool) -> typer.Exit:
    """Say that the disk is full (stderr, and ``--json``'s object); return exit 1 (issue 12).

    Raises:
        Exception: ``error`` itself when it is not a full disk.
    """
    if not is_disk_full(error):
        raise error
    message = str(error) if isinstance(error, DiskFull) else f"the disk is full: {error}"
    out_console(stderr=True, soft_wrap=True).print(
        line(("stopped:", "bold red"), f" {redact(message)}")
    )
    if json_out:
        data = {"run_id": None, "status": "stopped", "ending": None, "diagnosis": message}
        sys.stdout.write(redact(inert_json({**data, "stream": None})) + "\n")
    return typer.Exit(1)


def _print_result(console: Console, data: dict[str, object]) -> None:
    """The run's outcome for the operator: every value shown inert (issue 9 item 8)."""
    data = json.loads(redact(json.dumps(data)))
    ending = data["ending"]
    if isinstance(ending, dict):
        call = (str(ending["call"]), "bold green")
        if "summary" in ending:
            console.print(line(call, f": {ending['summary']}"))
        elif "items" in ending:
            console.print(line(call, ":"))
            for item in ending["items"]:
                console.print(line(f"  - {item}"))
        else:
            console.print(line(call))
    else:
        console.print(line(("stopped:", "bold red"), f" {data['diagnosis']}"))
    console.print(line((f"stream: {data['stream']}  (replay: gg show {data['run_id']})", "dim")))


@app.command(short_help="Continue a crashed or interrupted run from its stream.")
def resume(
    run_ref: _RunRef,
    workspace: _RunWorkspace = Path("."),
    model: Annotated[
        str | None,
        typer.Option(metavar="SPEC", help="Another model spec (default: the run's own)."),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON result object on stdout at the end.")
    ] = False,
    trust_config: Annotated[bool, typer.Option("--trust-config", help="As for gg run.")] = False,
) -> None:
    """Continue a run that crashed or was interrupted, from its verified stream.

    The stream's seal is checked first: an altered or truncated stream is refused
    (exit 3), one that cannot be verified too (exit 4). The run goes on as a new run
    (a run_resumed event names the one it continues) with the conversation, the
    ceiling counts and the budget spent that the stream's last checkpoint records;
    a turn cut off mid-way is done again. Exit codes as for gg run.
    """
    if model is not None:
        try:
            validate_spec(model)
        except UserError as e:
            raise _fail(f"--model: {e}") from None
    console = out_console(stderr=json_out)
    renderer = Renderer(console, spinner=True)
    try:
        path, seal_dir = _find_stream(run_ref, workspace)
        point = load_resume_point(path, seal_dir)
        result = resume_run(
            point, model=model, trust_config=trust_config, signals=True, listeners=(renderer,)
        )
    except ResumeRefused as e:
        out_console(stderr=True, soft_wrap=True).print(_error_line(str(e)))
        raise typer.Exit(e.exit_code) from None
    except UserError as e:
        raise _fail(str(e)) from None
    except ModelUnavailable as e:
        raise _fail(f"--model: {e}") from None
    _report(console, result, json_out=json_out)


def _report(console: Console, result: RunResult, *, json_out: bool) -> None:
    """Print a run's result (``--json`` or the operator's lines); exit with its code."""
    if json_out:
        if result.status == "stopped":  # the live view is on stderr: say why there too
            console.print(line(("stopped:", "bold red"), f" {redact(result.diagnosis or '')}"))
        sys.stdout.write(redact(inert_json(result.to_json())) + "\n")
    else:
        _print_result(console, result.to_json())
    raise typer.Exit(result.exit_code)


EXIT_ALTERED = 3
"""``gg show``/``gg watch``: the stream was altered or truncated (issue 9 item 3)."""
EXIT_UNVERIFIED = 4
"""``gg show``/``gg watch``: no key for the run, the stream cannot be verified."""

_VERDICT_HELP = (
    "The stream's seal is verified first: a stream altered or truncated after gg wrote it "
    "is reported as such, and only the events before the damage are shown. Exit codes: "
    f"0 intact (or still running / did not end, for show); 1 (watch) the run did not end; "
    f"2 not a stream, no such run; {EXIT_ALTERED} altered or truncated; {EXIT_UNVERIFIED} "
    "cannot be verified (no key for this run in gg's state on this machine)."
)


def _find_stream(ref: str, workspace: Path) -> tuple[Path, Path | None]:
    """The stream ``ref`` names and the directory of its seal.

    The seal's directory is ``None`` when it is located from the stream's first event.
    A run id is looked up in gg's state for ``workspace``; a run's directory stands for
    its ``stream.jsonl``.

    Raises:
        UserError: ``ref`` names none of these (the message says where gg looked).
    """
    where = "not a stream file or a run's directory"
    if RUN_ID_PATTERN.fullmatch(ref):
        warn_legacy(workspace.resolve())
        try:
            state = existing_state(workspace)
        except StateError as e:
            raise UserError(str(e)) from None
        candidate = (state or state_path(workspace)) / "runs" / ref / "stream.jsonl"
        if state is not None and candidate.is_file() and not candidate.is_symlink():
            return candidate, candidate.parent
        where += f", and no {candidate} (use --workspace)"
    else:
        where += f", nor a run id of {workspace.resolve()} (RUN_ID, as `gg run` printed it)"
    path = Path(ref)
    if path.is_dir() and (path / "stream.jsonl").is_file():
        return path / "stream.jsonl", None
    if path.is_file():
        return path, None
    raise UserError(f"no run {ref!r}: {where}")


def _say(console: Console, verdict: Verdict) -> None:
    """The verdict as one plain line: red when the stream cannot be trusted."""
    colour = {"intact": "green", "running": "green", "unended": "yellow"}.get(
        verdict.kind, "bold red"
    )
    console.print(line((verdict.message(), colour)), soft_wrap=True)


def _verdict_exit(verdict: Verdict) -> int:
    if verdict.kind in ("altered", "truncated"):
        return EXIT_ALTERED
    return EXIT_UNVERIFIED if verdict.kind == "unkeyed" else 0


def _read_checked(path: Path, seal_dir: Path | None) -> tuple[list[Event], Verdict]:
    """Read the whole stream once, checking each line; the events before any damage."""
    check = Checker(path, seal_dir=seal_dir)
    events: list[Event] = []
    with contextlib.suppress(StreamAltered):  # the verdict says where
        events.extend(read_events(path, check=check))
    verdict = check.finish(check.head_at_start)
    return events[: verdict.trusted], verdict


_UNENDED = line(
    (
        "the stream ends without run_ended: the run is still going, or its "
        "process was killed or crashed (nothing after this was recorded)",
        "yellow",
    )
)


@app.command(
    help=f"Replay a run's stream as a report, with a summary per session. {_VERDICT_HELP}",
    short_help="Replay a run's stream as a report, with a summary per session.",
)
def show(
    run_ref: _RunRef,
    workspace: _RunWorkspace = Path("."),
) -> None:
    """Replay a run's stream, verified (see the help text above)."""
    try:
        path, seal_dir = _find_stream(run_ref, workspace)
        events, verdict = _read_checked(path, seal_dir)
    except (UserError, OSError) as e:
        raise _fail(str(e)) from None
    console = out_console()
    _say(console, verdict)
    renderer = Renderer(console)
    for event in events:
        renderer(event)
    if verdict.kind in ("running", "unended") or (
        verdict.kind == "unkeyed" and events and events[-1].type != "run_ended"
    ):
        console.print(_UNENDED)
    console.print(summary_table(events))
    if verdict.kind not in ("intact", "running", "unended"):
        _say(console, verdict)
    raise typer.Exit(_verdict_exit(verdict))


@app.command(
    help=f"Follow a live run's stream until it ends (run_ended). {_VERDICT_HELP}",
    short_help="Follow a live run's stream until it ends.",
)
def watch(
    run_ref: _RunRef,
    workspace: _RunWorkspace = Path("."),
) -> None:
    """Follow a live run's stream, verified line by line (see the help text above)."""
    try:
        path, seal_dir = _find_stream(run_ref, workspace)
    except UserError as e:
        raise _fail(str(e)) from None
    console = out_console()
    renderer = Renderer(console)
    check = Checker(path, seal_dir=seal_dir)
    last = None
    try:
        for event in read_events(path, follow=True, check=check):
            if last is None and check.unkeyed:
                console.print(
                    line((f"STREAM UNVERIFIED: {check.unkeyed}", "bold red")), soft_wrap=True
                )
            renderer(event)
            last = event
        verdict = check.finish()
    except StreamAltered as e:
        verdict = e.verdict
    except (UserError, OSError) as e:
        raise _fail(str(e)) from None
    if verdict.kind != "intact":
        if verdict.kind in ("running", "unended"):
            console.print(_UNENDED)
        _say(console, verdict)
    code = _verdict_exit(verdict)
    if code == 0 and (last is None or last.type != "run_ended"):
        code = 1
    raise typer.Exit(code)


def _say_out(text: str) -> None:
    Console(highlight=False, soft_wrap=True).print(line(text))
    sys.stdout.flush()


def _say_err(text: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(line((text, "bold yellow")))


def _import_web() -> ModuleType:
    """Load :mod:`gg.web.server` (the ``web`` extra: starlette and uvicorn).

    Raises:
        typer.Exit: exit 2, naming the extra to install, when it is missing.
    """
    try:
        import gg.web.server as server
    except ImportError as e:
        raise _fail(
            f"gg serve needs the 'web' extra ({e.name or e}): pip install 'gg-agent[web]'"
        ) from None
    return server


@app.command()
def serve(
    workspace: Annotated[
        Path,
        typer.Option(
            "--workspace",
            "-w",
            metavar="DIR",
            show_default=False,
            help="The workspace (default: current).",
        ),
    ] = Path("."),
    host: Annotated[
        str,
        typer.Option(
            metavar="ADDRESS",
            help="Address to listen on. Loopback by default; any other address is reachable "
            "from other machines and is warned about (there is no authentication).",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            metavar="PORT", help="TCP port; 0 picks a free one (the URL printed says which)."
        ),
    ] = 8765,
    trust_config: TrustConfig = False,
) -> None:
    """Show the workspace's board and runs in a live, read-only web page.

    The board page has one column per issue state (each issue with its rounds, the
    reviewers' verdicts and items, the merge result) and the list of runs; a run's
    page shows its stream with the tamper check's verdict. Both follow the files as
    they are written (a board run in another process too). Every text from models,
    programs, tools and hooks is escaped. Prints the URL, then serves until Ctrl-C.

    Example: gg serve -w . --port 0
    """
    server = _import_web()
    try:
        server.serve(
            workspace,
            host=host,
            port=port,
            say=_say_out,
            warn=_say_err,
            trust_config=trust_config,
        )
    except UserError as e:
        raise _fail(str(e)) from None


@app.command()
def init(
    workspace: Annotated[
        Path,
        typer.Option(
            "--workspace",
            "-w",
            metavar="DIR",
            show_default=False,
            help="Where to write gg.toml (default: current).",
        ),
    ] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing gg.toml.")] = False,
) -> None:
    """Write a commented gg.toml with every default into the workspace."""
    target = workspace / CONFIG_NAME
    if os.path.lexists(target) and not force:
        raise _fail(f"{target} exists (use --force to overwrite)")
    if not workspace.is_dir():
        raise _fail(f"workspace {str(workspace)!r} does not exist")
    # never through a link planted at gg.toml: a fresh file renamed over the name
    tmp = workspace / f".{CONFIG_NAME}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
        )
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(default_toml())
        os.replace(tmp, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _fail(f"cannot write {str(target)!r}: {e.strerror or e}") from None
    out_console().print(line(f"wrote {target}"))


def main() -> None:
    """Console-script entry point.

    A reader that goes away before gg's output is all flushed (``gg show RUN | head -1``)
    ends gg quietly with exit 0 (:class:`gg.cliopts.Commands` handles it mid-command;
    this, at the last flush).
    """
    try:
        app()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_broken_pipe()
        code = 0
    raise SystemExit(code)
