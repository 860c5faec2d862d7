"""An MCP server's tool as a registry tool: the server's schema, calls over its connection.

:class:`McpTool` is a :class:`~gg.tools.registry.Tool` like any other: offered in
tool-calling mode, in a program's generated SDK, selected by capabilities and arms,
wrapped by ``pre_tool``/``post_tool`` hooks. Its arguments are checked against the
JSON Schema the server listed (a misfit is ``bad_arguments``, SPEC S5) and sent to
the server; what comes back is untrusted text, redacted and cut to the tool output
cap before the model sees it (:mod:`gg.text`). A server that fails, dies or does not
answer in time is a :class:`~gg.errors.ToolError` (the model sees why), never a
crash or a hang of gg.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

try:  # the mcp extra's (no stubs installed); without it no MCP tool is ever made
    import jsonschema  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - gg imports this module whatever the extras
    jsonschema = None

from gg.errors import UserError
from gg.text import cut, redact
from gg.tools.registry import ArgumentsError, Tool, ToolContext

__all__ = ["Caller", "McpTool", "check_schema"]

_MAX_PROBLEMS = 5


class Caller(Protocol):
    """The connection an :class:`McpTool` calls its server through (:mod:`gg.mcp.client`)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> str:
        """Call the server's tool ``name``; the result as text.

        Raises:
            gg.errors.ToolError: the server failed, returned an error, died or timed out.
        """
        ...


def check_schema(server: str, tool: str, schema: object) -> dict[str, Any]:
    """A server's input schema, checked to be an object schema gg can validate against.

    Returns:
        The schema, with ``properties`` present.

    Raises:
        UserError: not a JSON object of ``"type": "object"``, or not a valid JSON Schema.
    """
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise UserError(f"MCP server {server!r}: tool {tool!r} has no object input schema")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UserError(
            f"MCP server {server!r}: tool {tool!r} has an invalid input schema: "
            f"{cut(str(exc.message), 300)}"
        ) from None
    except RecursionError:
        raise UserError(
            f"MCP server {server!r}: tool {tool!r} has an input schema nested too deep"
        ) from None
    return {"type": "object", "properties": {}, **schema}


def _without_patterns(schema: Any) -> Any:
    """``schema`` with every ``pattern`` and ``patternProperties`` left out.

    A server's regular expressions run in Python's backtracking ``re``; one written to
    backtrack (``^(a+)+$``) would hold gg's event loop for as long as the attacker likes.
    gg checks everything else of a server's schema; the server checks its own patterns.
    """
    if isinstance(schema, dict):
        return {
            k: _without_patterns(v)
            for k, v in schema.items()
            if k not in ("pattern", "patternProperties")
        }
    if isinstance(schema, list):
        return [_without_patterns(v) for v in schema]
    return schema


@dataclass(frozen=True, kw_only=True)
class McpTool(Tool):
    """A tool of an MCP server, registered as ``mcp__<server>__<tool>`` (SPEC T1).

    Made by :mod:`gg.mcp.hub` from the server's listing; :attr:`parameters` is the
    server's input schema.
    """

    server: str
    """The configured server name (``[[tools.mcp]] name``)."""
    remote: str
    """The tool's name on the server."""
    timeout_s: float
    """Seconds one call may take (``[[tools.mcp]] timeout_s``)."""
    caller: Caller = field(repr=False, compare=False)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check the arguments against the server's input schema (SPEC S5), patterns aside.

        Raises:
            ArgumentsError: not an object, or the schema's errors (at most five named).
        """
        if not isinstance(arguments, Mapping):
            problem = f"the arguments must be a JSON object, got {type(arguments).__name__}"
            raise self._error((problem,))
        values = dict(arguments)
        schema = _without_patterns(self.parameters)
        checker = jsonschema.validators.validator_for(schema)(schema)
        problems: list[str] = []
        for err in checker.iter_errors(values):
            where = ".".join(str(p) for p in err.absolute_path)
            text = cut(str(err.message), 200)
            problems.append(f"argument {where!r}: {text}" if where else text)
            if len(problems) == _MAX_PROBLEMS:
                break
        if problems:
            raise self._error(tuple(problems))
        return values

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        """Call the tool on its server; the result redacted and cut to ``ctx.output_cap``.

        Raises:
            gg.errors.ToolError: the server failed, returned an error, died or timed out.
        """
        text = await self.caller.call_tool(self.remote, arguments, self.timeout_s)
        return cut(redact(text), ctx.output_cap, keep="middle")

    def _error(self, problems: tuple[str, ...]) -> ArgumentsError:
        props = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", ()))
        takes = ", ".join(f"{p} ({'required' if p in required else 'optional'})" for p in props)
        message = (
            f"bad arguments for tool {self.name!r}: {'; '.join(problems)}. "
            f"{self.name} takes: {takes or 'no arguments'}."
        )
        return ArgumentsError(message, tool=self.name, problems=problems)
