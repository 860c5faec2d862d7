"""The exact form of a call, built from a tool's JSON Schema, for feedback and prompts (SPEC S5).

An error turn's feedback says what to send instead (S5). For a small model the
surest way to say it is the call itself, ready to copy: in tool-calling mode the
JSON of a correct call (:func:`json_call`), in code mode a one-line program
(:func:`gg.sandbox.sdk.sdk_call`, which takes its arguments from
:func:`example_arguments`).

The example fills the *required* parameters only (optional ones keep the tool's
defaults): a string becomes ``"<name>"``, a number ``0``, a boolean ``false``,
an array a list of one example item, an object ``{}``; a parameter with an
``enum`` takes its first value, one with a ``default`` takes the default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ENDING_EXAMPLES",
    "change_arguments",
    "example_arguments",
    "example_value",
    "json_call",
    "placeholder_in",
]

ENDING_EXAMPLES: dict[str, dict[str, Any]] = {
    "finish": {"summary": "<what you did and how you checked it>"},
    "approve": {},
    "request_changes": {"items": ["<a change the implementer must make>"]},
}
"""Example arguments of the three ending calls (canonical names), for call forms."""


def example_value(name: str, schema: Any) -> Any:
    """An example value of the JSON Schema ``schema`` for the parameter ``name``.

    Args:
        name: the parameter's name (a string placeholder is ``"<name>"``).
        schema: its JSON Schema (anything else is treated as ``{}``).

    Returns:
        A JSON-able value that fits simple schemas (see the module docstring).
    """
    if not isinstance(schema, Mapping):
        return f"<{name}>"
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    alts = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alts, list) and alts:
        return example_value(name, alts[0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    if kind == "array":
        item = schema.get("items")
        return [example_value(name.rstrip("s") or name, item)] if item else []
    if kind == "object":
        return {}
    return f"<{name}>"


def example_arguments(parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """Example arguments for a tool: its required parameters, each an :func:`example_value`.

    Args:
        parameters: the tool's JSON Schema (``"type": "object"``), or ``None``.

    Returns:
        ``{name: value}`` in schema order; ``{}`` when nothing is required.
    """
    props = (parameters or {}).get("properties")
    required = (parameters or {}).get("required") or ()
    if not isinstance(props, Mapping):
        return {}
    return {k: example_value(k, v) for k, v in props.items() if k in required}


def json_call(
    name: str, parameters: Mapping[str, Any] | None, arguments: Mapping[str, Any] | None = None
) -> str:
    """A correct tool call as JSON, the form a tool-calling model sends (SPEC S5).

    Args:
        name: the tool's name.
        parameters: its JSON Schema.
        arguments: the arguments to show; default: an example (an ending call's own
            example from :data:`ENDING_EXAMPLES`, else :func:`example_arguments`).

    Returns:
        ``{"name": "read_file", "arguments": {"path": "<path>"}}`` as one line.
    """
    if arguments is None:
        arguments = ENDING_EXAMPLES.get(name) or example_arguments(parameters)
    return json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)


_PLACEHOLDER = re.compile(r"<[a-z][a-z0-9 _./-]{0,78}>", re.IGNORECASE)


def placeholder_in(arguments: Mapping[str, Any]) -> str | None:
    """The first argument whose value is a copied placeholder of the examples.

    A placeholder is ``"<path>"``, ``"<content>"``...: copied instead of a real value;
    ``None`` if no argument is one.

    A small model copies the call forms it is shown as they stand; such a call is refused
    (``bad_arguments``) rather than run, so no file named ``<path>`` is ever written.
    """
    for key, value in arguments.items():
        if isinstance(value, str) and _PLACEHOLDER.fullmatch(value.strip()):
            return key
    return None


def change_arguments(parameters: Mapping[str, Any] | None, path: str | None) -> dict[str, Any]:
    """Example arguments of a writing tool aimed at ``path`` (the file last read).

    So the form shown names a real file: ``{"path": "calc.py", "content": "<the whole
    new content of calc.py>"}``; without ``path``, :func:`example_arguments`.
    """
    args = example_arguments(parameters)
    if path and "path" in args:
        args["path"] = path
        for key, value in args.items():
            if key != "path" and isinstance(value, str):
                args[key] = f"<the whole new {key} of {path}>"
    return args
