"""Option types and command classes shared by every ``gg`` command (SPEC §10 CLI, O3).

``Annotated`` aliases for typer: a command declares ``trust_config: TrustConfig = False``
and gets the flag, its help and its type, the same in every command that takes it.

:class:`Commands` is the class of ``gg``'s command groups (``typer.Typer(cls=Commands)``):

- a reader that closes gg's stdout early (``gg show RUN | head -1``) ends gg quietly
  with exit 0, as git does, instead of a traceback or exit 1;
- :func:`out_console` is every command's console: on a terminal as wide as the
  terminal; to a file or a pipe, lines are never hard-wrapped at 80 columns;
- usage lines name arguments plainly (``gg run [OPTIONS] TASK``), not as typer's
  ``{task}``; every command of the group (and of groups added to it) gets this.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperCommand, TyperGroup

if TYPE_CHECKING:  # typer 0.2x vendors click; older typer uses click itself (same API)
    from typer._click.core import Command, Context

__all__ = ["PIPE_WIDTH", "Commands", "TrustConfig", "out_console", "quiet_broken_pipe"]

PIPE_WIDTH = 1000
"""Columns gg's output is laid out in when it goes to a file or a pipe (no ``COLUMNS``):
long lines are never hard-wrapped there, and tables only wrap cells past this."""

TrustConfig = Annotated[
    bool,
    typer.Option(
        "--trust-config",
        help="Accept a gg.toml that changed since this workspace's last run and now asks "
        'for settings that weaken the sandbox or send data elsewhere (commands = "host", a '
        "trusted hook, pass_env, a forced isolation layer, a model server URL, a board store "
        "other than gg's own file, the Ray executor): gg refuses it otherwise, since an "
        "agent could have written the file.",
    ),
]
"""``--trust-config`` (:mod:`gg.trust`): accept a newly weakening ``gg.toml`` once."""


def quiet_broken_pipe(stream: IO[str] | None = None) -> None:
    """Point ``stream`` (default: stdout) at ``/dev/null``: its reader has gone (``EPIPE``).

    Nothing more is written to the closed pipe, and Python's own flush at exit has nowhere
    to fail, so no "Exception ignored" message reaches stderr.
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, (stream or sys.stdout).fileno())
        os.close(null)


class _Console(Console):
    """rich's console, but a reader that went away ends gg with exit 0 (rich exits 1)."""

    def on_broken_pipe(self) -> None:
        """Stop writing and end gg quietly with exit 0 (SPEC O3), as git does."""
        self.quiet = True
        quiet_broken_pipe(self.file)
        raise SystemExit(0)


class _Command(TyperCommand):
    """A typer command whose usage line names arguments as written (``TASK``, ``N``)."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        """``[OPTIONS]`` then each argument's metavar (``[NAME]`` when optional)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not isinstance(param, TyperArgument):
                pieces.extend(param.get_usage_pieces(ctx))
                continue
            name = param.metavar or (param.name or "arg").upper()
            name = name if param.required else f"[{name}]"
            pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces


class Commands(TyperGroup):
    """gg's command group (see the module doc): quiet on a closed pipe, plain usage lines."""

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        """The command named ``cmd_name``, given this module's behaviour (groups too)."""
        cmd = super().get_command(ctx, cmd_name)
        if type(cmd) is TyperCommand:
            cmd.__class__ = _Command
        elif type(cmd) is TyperGroup:
            cmd.__class__ = Commands
        return cmd

    def invoke(self, ctx: Context) -> Any:
        """Run the command; a closed stdout ends gg with exit 0 (O3), nothing on stderr."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            quiet_broken_pipe()
            raise typer.Exit(0) from None


def out_console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """The console a command prints through (no highlighting; SPEC §10 CLI).

    Args:
        stderr: print to stderr instead of stdout.
        soft_wrap: on a terminal too, let long lines run on instead of wrapping them.

    A closed pipe (``gg show RUN | head -1``) ends gg with exit 0 and nothing on stderr.

    Returns:
        On a terminal (or with ``COLUMNS`` set), a console as wide as it; to a file or a
        pipe, one that never hard-wraps a line and lays tables out in :data:`PIPE_WIDTH`
        columns, so ``gg show RUN > report.txt`` keeps each line whole.
    """
    console = _Console(stderr=stderr, highlight=False, soft_wrap=soft_wrap)
    if console.is_terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return console
    return _Console(stderr=stderr, highlight=False, soft_wrap=True, width=PIPE_WIDTH)
