"""Option types shared by ``gg``'s commands and ``gg board``'s (one help text each; SPEC §10).

``Annotated`` aliases for typer: a command declares ``trust_config: TrustConfig = False``
and gets the flag, its help and its type, the same in every command that takes it.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["TrustConfig"]

TrustConfig = Annotated[
    bool,
    typer.Option(
        "--trust-config",
        help="Accept a gg.toml that changed since this workspace's last run "
        'and now asks for settings that weaken the sandbox (commands = "host", a trusted '
        "hook, pass_env, a forced isolation layer, a model server URL, a store path): gg "
        "refuses such a run otherwise, since an agent could have written the file.",
    ),
]
"""``--trust-config`` (:mod:`gg.trust`): accept a newly weakening ``gg.toml`` once."""
