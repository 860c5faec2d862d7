"""``gg run --record FILE``: write a run's replies in the scripted-model format.

:class:`RecordingModel` wraps any model and, after every reply, rewrites the
file atomically (write to a temp file, then rename), so a crashed run still
leaves a valid file holding every reply so far. Replaying it with
``--model scripted:FILE`` serves the same replies in the same order.

The file may sit in a workspace an agent writes (issue 9, the trust boundary):
its directory is opened once, when the recording starts, and every write
goes through that descriptor: a fresh temp name created with ``O_EXCL`` and
``O_NOFOLLOW``, then renamed over the file's name (a rename replaces a
symbolic link planted there; it never writes through it). A directory
swapped for a link later changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from gg.errors import UserError
from gg.models.base import Message, Model, Reply, ToolSpec
from gg.models.boundary import clean_reply
from gg.models.scripted import reply_to_dict
from gg.text import redact

__all__ = ["RecordingModel", "check_target"]


def check_target(path: Path) -> Path:
    """``path`` when ``--record`` can write a recording there, else a one-line error (issue 12).

    The path must name a file (not ``""``, ``.`` or a directory), that file must be
    absent, a regular file or a link (a rename replaces a link), and its directory
    must take a new file: a temp file is made there and removed at once, so a
    read-only place, ``/proc`` or ``/sys`` is refused before the run starts, not
    after its first reply.

    Args:
        path: the ``--record`` value.

    Returns:
        ``path`` with ``~`` expanded.

    Raises:
        UserError: naming ``--record``, the path and what is wrong with it.
    """
    path = path.expanduser()
    where = f"--record: cannot write {str(path)!r}"
    if path.name in ("", ".", ".."):
        raise UserError(f"{where}: it names no file (give a file path, e.g. run.json)")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = 0
    except OSError as e:
        raise UserError(f"{where}: {e.strerror}") from None
    if stat.S_ISDIR(mode):
        raise UserError(f"{where}: it is a directory (give a file path inside it)")
    if mode and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise UserError(f"{where}: it is not a regular file")
    _probe(path.parent, where)
    return path


def _probe(parent: Path, where: str) -> None:
    """Make and remove one temp file in ``parent`` (UserError when it cannot)."""
    tmp = f".gg-record-probe.{secrets.token_hex(6)}.tmp"
    try:
        dir_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise UserError(
            f"{where}: {str(parent)!r} is not a writable directory ({e.strerror})"
        ) from None
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(tmp, flags, 0o600, dir_fd=dir_fd))
        os.unlink(tmp, dir_fd=dir_fd)
    except OSError as e:
        raise UserError(f"{where}: {str(parent)!r} takes no new file ({e.strerror})") from None
    finally:
        os.close(dir_fd)


class RecordingModel:
    """Wraps ``inner`` and records its replies to ``path`` (SPEC §10 scripted format).

    Raises:
        OSError: here if ``path``'s directory cannot be opened; from :meth:`respond`
            if the file cannot be written.
    """

    def __init__(self, inner: Model, path: Path, *, dir_fd: int | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = path
        self.replies: list[dict[str, Any]] = []
        self._dir_fd = (
            dir_fd
            if dir_fd is not None
            else os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        )
        """``path``'s directory, opened once (given: the caller opened it beneath a workspace,
        and this object owns it now)."""

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Ask the inner model, record the reply and return it.

        The reply is cleaned at the model boundary first
        (:func:`gg.models.boundary.clean_reply`), so it always serialises.
        """
        reply = clean_reply(await self.inner.respond(messages, tools))
        self.replies.append(reply_to_dict(reply))
        self._write()
        return reply

    def _write(self) -> None:
        # secrets never reach the file, as on the stream (a replay then serves "[redacted]")
        data = redact(json.dumps({"replies": self.replies}, indent=1, ensure_ascii=False))
        tmp = f".{self.path.name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o644, dir_fd=self._dir_fd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(data)
            os.replace(tmp, self.path.name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self._dir_fd)
            raise

    def __del__(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            os.close(self._dir_fd)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
