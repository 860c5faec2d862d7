"""The scripted model: replies served from a list or a file (SPEC M4, §10).

File format (JSON)::

    {"replies": [
      {"text": "prose only"},
      {"tool_calls": [{"name": "finish", "arguments": {"summary": "Done."}}]},
      {"text": "optional", "tool_calls": [{"name": "submit_program",
         "arguments": {"program": "gg.session.finish('ok')"}}]}
    ]}

Replies are served in order, one per turn, across all the sessions that share
the model, in the order they ask. When none is left, :meth:`respond` raises
:class:`gg.errors.ScriptExhausted` and the run stops with a diagnosis saying so.
``arguments`` may also be a string: it is decoded as JSON, and when that
fails it reaches the session as raw text (an error turn ``bad_arguments``),
which is how a test scripts a malformed call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gg import bounded
from gg.errors import ScriptExhausted, UserError
from gg.models.base import Message, Reply, ToolCall, ToolSpec, Usage

__all__ = ["ScriptedModel", "reply_from_dict", "reply_to_dict"]


class _CallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | str = {}
    id: str = ""


class _UsageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0


class _ReplyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[_CallIn] = []
    usage: _UsageIn | None = None


class _FileIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    replies: list[_ReplyIn]


def _call(c: _CallIn) -> ToolCall:
    if isinstance(c.arguments, dict):
        return ToolCall(name=c.name, arguments=c.arguments, id=c.id)
    try:
        decoded = bounded.loads(c.arguments, what="a text")  # deep or huge: refused, no crash
    except bounded.BadJSON as e:
        return ToolCall(name=c.name, arguments=c.arguments, id=c.id, parse_error=str(e))
    if not isinstance(decoded, dict):
        err = f"arguments must be a JSON object, got {type(decoded).__name__}"
        return ToolCall(name=c.name, arguments=c.arguments, id=c.id, parse_error=err)
    return ToolCall(name=c.name, arguments=decoded, id=c.id)


def _reply(r: _ReplyIn) -> Reply:
    usage = Usage(**r.usage.model_dump()) if r.usage else Usage()
    return Reply(text=r.text, tool_calls=tuple(_call(c) for c in r.tool_calls), usage=usage)


def reply_from_dict(data: dict[str, Any]) -> Reply:
    """Build a :class:`Reply` from one entry of the file format.

    Raises:
        UserError: if the entry does not fit the format (message names the field).
    """
    try:
        return _reply(_ReplyIn.model_validate(data))
    except ValidationError as e:
        raise UserError(f"bad scripted reply: {_first_error(e)}") from None


def reply_to_dict(reply: Reply) -> dict[str, Any]:
    """The file-format entry for ``reply`` (used by ``gg run --record``)."""
    out: dict[str, Any] = {}
    if reply.text:
        out["text"] = reply.text
    if reply.tool_calls:
        out["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
    if reply.usage.input_tokens or reply.usage.output_tokens:
        out["usage"] = {
            "input_tokens": reply.usage.input_tokens,
            "output_tokens": reply.usage.output_tokens,
        }
    return out


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else err["msg"]


class ScriptedModel:
    """A model that serves fixed replies in order (for tests, demos and replays).

    Args:
        replies: the replies, as :class:`Reply` objects or file-format dicts.
        name: the model spec shown on the stream.
        keep_calls: record each request in :attr:`calls` (turn off for benchmarks).

    Attributes:
        calls: one ``(messages, tool names)`` pair per request, in order.
    """

    def __init__(
        self,
        replies: Sequence[Reply | dict[str, Any]],
        *,
        name: str = "scripted",
        keep_calls: bool = True,
    ) -> None:
        self.name = name
        self._replies = [r if isinstance(r, Reply) else reply_from_dict(r) for r in replies]
        self._next = 0
        self._keep = keep_calls
        self.calls: list[tuple[list[Message], list[str]]] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """Load a scripted-model file (SPEC §10).

        Raises:
            UserError: the file is missing, not JSON, or not in the format;
                the one-line message names the file and the problem.
        """
        p = Path(path)
        try:
            raw = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise UserError(
                f"scripted model file {str(p)!r} is not UTF-8 text ({e.reason} at byte {e.start})"
            ) from None
        except OSError as e:
            raise UserError(f"cannot read scripted model file {str(p)!r}: {e.strerror}") from None
        try:
            data = _FileIn.model_validate_json(raw)
        except ValidationError as e:
            raise UserError(f"scripted model file {str(p)!r}: {_first_error(e)}") from None
        return cls([_reply(r) for r in data.replies], name=f"scripted:{p}")

    @property
    def remaining(self) -> int:
        """How many replies are left."""
        return len(self._replies) - self._next

    def skip(self, count: int) -> None:
        """Pass over the first ``count`` replies: an interrupted run served them already.

        ``gg resume`` goes on from the reply after (issue 12 item 4).
        """
        self._next = min(self._next + max(count, 0), len(self._replies))

    def pass_over(self, indices: Sequence[int]) -> None:
        """Pass over the replies at ``indices`` (from 0, of those not served yet).

        The replies a continued run had been served and does not ask for again
        (``gg resume``, issue 12 item 4: :meth:`gg.checkpoint.Interrupted.kept_replies`);
        the others are served in their order. Indices out of range are ignored.
        """
        drop = set(indices)
        rest = self._replies[self._next :]
        self._replies = self._replies[: self._next] + [
            r for i, r in enumerate(rest) if i not in drop
        ]

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Serve the next reply.

        Raises:
            ScriptExhausted: when every reply has been served.
        """
        if self._keep:
            self.calls.append((list(messages), [t.name for t in tools]))
        if self._next >= len(self._replies):
            raise ScriptExhausted(
                f"the scripted model has no more replies (all {len(self._replies)} were served)",
                provider="scripted",
            )
        reply = self._replies[self._next]
        self._next += 1
        return reply

    def assert_complete(self) -> None:
        """Raise ``AssertionError`` unless every reply was served."""
        if self.remaining:
            raise AssertionError(f"{self.remaining} scripted replies were never served")
