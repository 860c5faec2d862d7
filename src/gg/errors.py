"""gg's exceptions: one root, families under it.

The tree::

    GGError                      root of every error gg raises on purpose
    ├── UserError                misuse: bad configuration, bad argument, bad file
    │   └── ConfigError          a bad `gg.toml` key or value; carries `.key`
    ├── ModelError               a model could not produce a reply; carries `.provider`
    │   ├── ModelUnavailable     the model cannot be loaded or reached (missing file, key)
    │   └── ScriptExhausted      the scripted model has no more replies
    ├── ToolError                a registry tool failed; the model sees the message
    │   └── WorkspaceEscape      a path left the workspace (SPEC §10 built-in tools)
    ├── ArgumentsError           (gg.tools.registry) a call's arguments don't fit the schema
    ├── BoardError               (gg.board.errors) a board operation failed; carries a code,
    │                            the operation, and whether a retry helps
    └── SandboxError             the sandbox could not run a program; carries `.retryable`

Model-facing problems (a malformed reply, a refused ending) are not
exceptions: they become error turns with feedback (SPEC S5); a hook's own
failure is an outcome of the gate (SPEC H1), and a run stopped without an
ending is a result (``status == "stopped"`` with a diagnosis), never an
exception. Constructing an error never logs.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "DiskFull",
    "GGError",
    "ModelError",
    "ModelUnavailable",
    "SandboxError",
    "ScriptExhausted",
    "ToolError",
    "UserError",
    "WorkspaceEscape",
]


class GGError(Exception):
    """Root of every error gg raises on purpose."""


class UserError(GGError):
    """Misuse of gg: a bad argument, file or option. The CLI exits 2 (SPEC O3)."""


class ConfigError(UserError):
    """A bad configuration key or value (SPEC C1).

    Attributes:
        key: the dotted key at fault, e.g. ``"ceilings.max_turns"``, or ``None``
            when the file as a whole is bad (not TOML, not found).
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class ModelError(GGError):
    """A model could not produce a reply (provider error, retries exhausted).

    Attributes:
        provider: the provider's name, e.g. ``"scripted"``, ``"openai"``.
    """

    def __init__(self, message: str, *, provider: str) -> None:
        super().__init__(message)
        self.provider = provider


class ModelUnavailable(ModelError):
    """The model cannot be loaded or reached: missing file, corrupt file, no key."""


class ScriptExhausted(ModelError):
    """The scripted model was asked for a reply after its last one (SPEC §10)."""


class ToolError(GGError):
    """A registry tool failed. Its message is handed to the model as the result."""


class WorkspaceEscape(ToolError):
    """A tool path resolved outside the workspace (SPEC §10 built-in tools)."""


class SandboxError(GGError):
    """The sandbox could not run a program at all (not a program's own error).

    Attributes:
        retryable: whether trying again may help.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class DiskFull(GGError):
    """A disk gg writes to (the stream, the board's store, the workspace) is full (issue 12).

    The message names the file and the filesystem's mount point
    (:func:`gg.disk.disk_full`); the run stops with it as its diagnosis.

    Attributes:
        path: the file gg could not write.
        mount: the mount point of the filesystem holding it.
    """

    def __init__(self, message: str, *, path: Path, mount: Path) -> None:
        super().__init__(message)
        self.path = path
        self.mount = mount
