"""``gg run --record FILE``: write a run's replies in the scripted-model format.

:class:`RecordingModel` wraps any model and, after every reply, rewrites the
file atomically (write to a temp file, then rename), so a crashed run still
leaves a valid file holding every reply so far. Replaying it with
``--model scripted:FILE`` serves the same replies in the same order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gg.models.base import Message, Model, Reply, ToolSpec
from gg.models.scripted import reply_to_dict
from gg.stream import redact

__all__ = ["RecordingModel"]


class RecordingModel:
    """Wraps ``inner`` and records its replies to ``path`` (SPEC §10 scripted format).

    Raises:
        OSError: from :meth:`respond` if the file cannot be written.
    """

    def __init__(self, inner: Model, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = path
        self.replies: list[dict[str, Any]] = []

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Ask the inner model, record the reply, return it unchanged."""
        reply = await self.inner.respond(messages, tools)
        self.replies.append(reply_to_dict(reply))
        self._write()
        return reply

    def _write(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        # secrets never reach the file, as on the stream (a replay then serves "[redacted]")
        tmp.write_text(redact(json.dumps({"replies": self.replies}, indent=1,
                                         ensure_ascii=False)))
        os.replace(tmp, self.path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
