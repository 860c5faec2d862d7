"""The limits one sandboxed program runs under (SPEC M3, C1 "sandbox limits").

Passing a limit ends the program as a runtime error with ``ProgramResult.limit``
naming it; it never crashes gg. What each one bounds, and how:

===================  =================================================================
field                enforced by
===================  =================================================================
``wall_s``           gg's clock; the whole process tree is killed. Time gg spends
                     answering the program's SDK calls does not count.
``cpu_s``            ``RLIMIT_CPU`` per process (SIGXCPU, then SIGKILL 1 s later).
``memory_mb``        Python: ``RLIMIT_AS`` per process (``MemoryError``).
                     JavaScript: V8's old space at 3/4 of it, and ``RLIMIT_DATA`` at
                     ``memory_mb + 1536`` (each V8 isolate, the main one and each
                     Worker, reserves about 512 MiB of code range up front, so
                     about two Workers fit): an approximate bound.
                     Per process: a program with many processes can use more.
``processes``        ``RLIMIT_NPROC`` on the dedicated uid (root) or on top of gg's
                     own count (non-root).
``output_bytes``     gg stops reading and kills the program past it; the output
                     keeps its first ``output_bytes`` bytes and a marker.
``file_size_mb``     ``RLIMIT_FSIZE`` (Python gets ``OSError [Errno 27]``).
``open_files``       ``RLIMIT_NOFILE``.
``message_bytes``    the longest SDK message gg accepts (one JSON line).
``membrane_bytes``   all SDK messages of one program together.
``calls``            the most SDK calls one program may make.
``program_bytes``    the largest program gg compiles (UTF-8 bytes); a larger one is
                     not run (an error turn, ``compile_error``).
``tmp_mb``           the size of the private ``/tmp`` and ``/dev/shm`` (bubblewrap's
                     tmpfs only).
``write_bytes``      what one program or command may add to the disk under the
``write_files``      workspace (and its private tmp on the host's disk): gg polls
                     ``statvfs`` and, when the disk lost that much, counts what
                     changed since the start (:mod:`gg.sandbox.writes`); past
                     either, it kills the program.
===================  =================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from gg.config import SandboxSettings
from gg.errors import UserError

__all__ = ["Limits"]

_DEFAULTS = SandboxSettings()
"""``[sandbox]``'s defaults: the one source of the limits ``gg.toml`` can set."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Resource limits for one program or shell command (SPEC M3).

    The limits ``[sandbox]`` can set take its defaults (:class:`gg.config.SandboxSettings`);
    the others are fixed here.
    """

    wall_s: float = _DEFAULTS.wall_s
    """Wall-clock seconds, not counting time gg spends answering SDK calls."""
    cpu_s: float = _DEFAULTS.cpu_s
    """CPU seconds per process."""
    memory_mb: int = _DEFAULTS.memory_mb
    """Address space (Python) or heap (JavaScript) per process, in MiB."""
    processes: int = _DEFAULTS.processes
    """Processes and threads the program may have at once."""
    output_bytes: int = _DEFAULTS.output_bytes
    """Bytes of stdout+stderr kept; more ends the program."""
    file_size_mb: int = 64
    """Largest file the program may write, in MiB."""
    open_files: int = 256
    """Open file descriptors per process."""
    message_bytes: int = 1_000_000
    """Largest SDK message (one JSON line), in bytes."""
    membrane_bytes: int = 64_000_000
    """Bytes of SDK messages one program may send in all (past it: limit ``membrane``)."""
    calls: int = 10_000
    """SDK calls per program."""
    program_bytes: int = _DEFAULTS.program_bytes
    """Largest program source, in UTF-8 bytes (issue 9 item 6: no program text crashes gg)."""
    tmp_mb: int = 256
    """Size of the private /tmp (and /dev/shm) under bubblewrap, in MiB."""
    write_bytes: int = _DEFAULTS.write_bytes
    """Bytes one program or command may add to the workspace (issue 9, item 7): 1 GiB, ten
    times a large dependency install, far below a CI disk."""
    write_files: int = _DEFAULTS.write_files
    """Files and directories one program or command may make or change: 100,000, above a
    large ``node_modules`` or a Linux kernel checkout (about 90,000)."""

    @classmethod
    def from_settings(cls, settings: SandboxSettings) -> Limits:
        """The limits ``[sandbox]`` sets (same names), the others at their defaults.

        Args:
            settings: the validated ``[sandbox]`` section.

        Returns:
            The limits.

        Raises:
            gg.errors.UserError: a limit is not a positive number.
        """
        names = {f.name for f in fields(cls)} & set(SandboxSettings.model_fields)
        return cls(**settings.model_dump(include=names))

    def __post_init__(self) -> None:
        """Reject a limit that is not a positive number.

        Raises:
            gg.errors.UserError: naming the field.
        """
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise UserError(f"sandbox limit {name!r} must be a positive number, not {value!r}")
