"""Generate the SDK a program imports as ``gg``, per language, from the arm's tools (SPEC M2).

Every SDK declares ``gg.tools.<name>`` for each registry tool offered and,
whatever the role, all three ending calls (SPEC S2, ending-a-session.md):
``gg.session.finish``, ``gg.session.approve`` and
``gg.session.request_changes`` (Python) / ``gg.session.requestChanges``
(JavaScript). The membrane, not the SDK, decides which of them the caller
may use (SPEC S3): ending calls forward whatever they are given, so the role
is checked before the shape.

Python: ``gg.tools.read_file(path="a.txt")`` or ``gg.tools.read_file("a.txt")``:
parameters keep the JSON Schema's names, required ones first, in schema
order; optional ones left out are not sent (the tool's default applies).
JavaScript: ``await gg.tools.readFile({path: "a.txt"})`` (keys in the
schema's spelling or camelCase) or ``await gg.tools.readFile("a.txt")``
(positional, in the same order). A single plain object is taken as the named
arguments unless the tool's first parameter is itself an object.

A failed call raises (Python) or rejects with (JavaScript) ``gg.ToolError``,
``gg.EndingRefused`` or ``gg.BadCall``, all subclasses of ``gg.CallError``;
the message is gg's. An ending call returns ``None`` / resolves to
``undefined``: it does not stop the program (SPEC S8).

The generated text is built only from ``repr``/JSON literals and sanitized
identifiers, so a tool's name or description cannot inject code.
"""

from __future__ import annotations

import copy
import json
import keyword
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from gg.callform import ENDING_EXAMPLES, example_arguments
from gg.endings import ENDING_CALLS, Role, ending_tool_specs, spell
from gg.models.base import ToolSpec

__all__ = ["sdk_call", "sdk_signatures", "sdk_source"]

Language = Literal["python", "javascript"]


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    """The property name in the JSON Schema (what is sent)."""
    ident: str
    """The Python identifier for it (the name itself when it is one)."""
    required: bool
    schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Function:
    call: str
    """What is sent: the tool's registry name or the canonical ending name."""
    kind: Literal["tool", "ending"]
    py_name: str
    js_name: str
    params: tuple[_Param, ...]
    doc: str


def _identifier(name: str) -> str:
    ident = re.sub(r"\W", "_", name) or "_"
    if ident[0].isdigit() or ident.startswith("__"):
        ident = "t" + ident  # never a dunder: it would replace the namespace's own methods
    if keyword.iskeyword(ident) or keyword.issoftkeyword(ident):
        ident += "_"
    return ident


def _camel(name: str) -> str:
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", name) if p]
    if not parts:
        return "_"
    text = parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
    return "_" + text if text[0].isdigit() else text


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate)
    return candidate


def _params(schema: dict[str, Any]) -> tuple[_Param, ...]:
    props = schema.get("properties") or {}
    required = [p for p in schema.get("required") or [] if p in props]
    order = required + [p for p in props if p not in required]
    taken: set[str] = {"self"}
    params = []
    for name in order:
        sub = props[name] if isinstance(props[name], dict) else {}
        ident = _unique(_identifier(name), taken)
        params.append(_Param(name=name, ident=ident, required=name in required, schema=sub))
    return tuple(params)


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _functions(tools: Sequence[ToolSpec]) -> tuple[list[_Function], list[_Function]]:
    """The SDK's functions for ``tools``: the tools', then the endings' (fresh lists)."""
    # the caller's schemas may change later: the cache makes its own copy, as its key saw them
    key = repr(list(tools))  # specs are JSON-shaped: equal reprs, equal specs
    made = _remember(_MADE, key, lambda: _make_functions(copy.deepcopy(list(tools))))
    return list(made[0]), list(made[1])


_KEPT = 32
"""Entries each of the SDK's caches keeps (a session asks for its arm's SDK every turn)."""
_MADE: dict[str, tuple[tuple[_Function, ...], tuple[_Function, ...]]] = {}
"""The SDK's functions made lately, by tools."""
_SOURCES: dict[tuple[str, str], str] = {}
"""SDK sources made lately, by language and tools."""
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: dict[_K, _V], key: _K, make: Callable[[], _V]) -> _V:
    """``cache[key]``, made by ``make`` when missing; the oldest entry goes past :data:`_KEPT`."""
    if key not in cache:
        if len(cache) >= _KEPT:
            cache.pop(next(iter(cache)))
        cache[key] = make()
    return cache[key]


def _make_functions(
    tools: Sequence[ToolSpec],
) -> tuple[tuple[_Function, ...], tuple[_Function, ...]]:
    py_taken: set[str] = set()
    js_taken: set[str] = set()
    tool_fns = []
    for spec in tools:
        tool_fns.append(
            _Function(
                call=spec.name,
                kind="tool",
                py_name=_unique(_identifier(spec.name), py_taken),
                js_name=_unique(_camel(spec.name), js_taken),
                params=_params(spec.parameters or {}),
                doc=spec.description or "",
            )
        )
    specs = {s["name"]: s for r in (Role.STANDARD, Role.REVIEW) for s in ending_tool_specs(r)}
    endings = [
        _Function(
            call=call,
            kind="ending",
            py_name=call,
            js_name=spell(call, "javascript"),
            params=_params(specs[call]["parameters"]),
            doc=specs[call]["description"],
        )
        for call in ENDING_CALLS
    ]
    return tuple(tool_fns), tuple(endings)


# ---------------------------------------------------------------- types


_TYPE_NAMES: dict[str, dict[str, str]] = {
    # JSON Schema type -> spelling, per language; "any"/"list"/"dict" are the fallbacks
    "python": {
        "string": "str",
        "integer": "int",
        "number": "float",
        "boolean": "bool",
        "null": "None",
        "object": "dict",
        "any": "Any",
        "list": "list",
    },
    "javascript": {
        "string": "string",
        "integer": "number",
        "number": "number",
        "boolean": "boolean",
        "null": "null",
        "object": "object",
        "any": "any",
        "list": "any[]",
    },
}


def _type_name(schema: dict[str, Any], language: str) -> str:
    """A JSON Schema's type as ``language`` spells it in a signature (shown to the model)."""
    names = _TYPE_NAMES[language]
    kind = schema.get("type")
    if isinstance(kind, list):
        spelled = (_type_name({**schema, "type": k}, language) for k in kind)
        return " | ".join(dict.fromkeys(spelled)) or names["any"]
    if kind == "array":
        items = schema.get("items")
        if not (isinstance(items, dict) and items):
            return names["list"]
        inner = _type_name(items, language)
        return f"list[{inner}]" if language == "python" else f"{inner}[]"
    return names.get(kind, names["any"]) if isinstance(kind, str) else names["any"]


def _py_type(schema: dict[str, Any]) -> str:
    return _type_name(schema, "python")


def _js_type(schema: dict[str, Any]) -> str:
    return _type_name(schema, "javascript")


def _py_default(param: _Param) -> str:
    default = param.schema.get("default", ...)
    if isinstance(default, str | int | float | bool) or default is None:
        return repr(default)
    return "_UNSET"


# ---------------------------------------------------------------- Python


_PY_HEADER = '''"""gg: the SDK of this program, generated by gg. Every call goes to gg."""
from __future__ import annotations

from typing import Any

__all__ = ["BadCall", "CallError", "EndingRefused", "ToolError", "session", "tools"]


class CallError(Exception):
    """A gg call failed or was refused; the message says why and what to do instead."""


class ToolError(CallError):
    """A tool failed (for example: a path outside the workspace)."""


class EndingRefused(CallError):
    """gg refused an ending call: not one of your endings, or arguments of the wrong shape."""


class BadCall(CallError):
    """gg cannot take this call (an unknown tool, arguments that are not JSON)."""


_ERRORS = {"tool_error": ToolError, "ending_refused": EndingRefused, "bad_call": BadCall}


class _Unset:
    def __repr__(self) -> str:
        return "<not given>"


_UNSET: Any = _Unset()


def _invoke(kind: str, name: str, arguments: dict[str, Any]) -> Any:
    sent = {k: v for k, v in arguments.items() if v is not _UNSET}
    answer = _transport(kind, name, sent)  # noqa: F821 - bound by the runner
    if answer.get("ok"):
        return answer.get("value")
    error = _ERRORS.get(answer.get("error_type"), CallError)
    raise error(answer.get("error") or "the call failed")


def _named(names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict:
    sent = dict(kwargs)
    for i, value in enumerate(args):
        sent[names[i] if i < len(names) else f"argument_{i + 1}"] = value
    return sent


class _Namespace:
    __slots__ = ()
    _label = "gg"

    def __repr__(self) -> str:
        names = [n for n in dir(type(self)) if not n.startswith("_")]
        return f"<{self._label}: {', '.join(names)}>"

'''


def _py_tool(fn: _Function) -> str:
    params = [p for p in fn.params]
    sig = ", ".join(
        f"{p.ident}: {_py_type(p.schema)}" + ("" if p.required else f" = {_py_default(p)}")
        for p in params
    )
    args = ", ".join(f"{p.name!r}: {p.ident}" for p in params)
    doc = fn.doc.strip() or fn.call
    arg_docs = [
        f"    {p.ident}: {_first_line(str(p.schema.get('description', '')))}" for p in params
    ]
    if arg_docs:
        doc += "\n\nArgs:\n" + "\n".join(arg_docs)
    return (
        f"    @staticmethod\n    def {fn.py_name}({sig}) -> Any:\n"
        f"        {doc!r}\n"
        f"        return _invoke('tool', {fn.call!r}, {{{args}}})\n"
    )


def _py_ending(fn: _Function) -> str:
    names = tuple(p.name for p in fn.params)
    sig = ", ".join(f"{p.ident}: {_py_type(p.schema)}" for p in fn.params)
    doc = f"{fn.doc.strip()}\n\nSignature: {fn.py_name}({sig}). Returns None; the program runs on."
    return (
        f"    @staticmethod\n    def {fn.py_name}(*args: Any, **kwargs: Any) -> None:\n"
        f"        {doc!r}\n"
        f"        _invoke('ending', {fn.call!r}, _named({names!r}, args, kwargs))\n"
    )


def _python_source(tools: list[_Function], endings: list[_Function]) -> str:
    parts = [
        _PY_HEADER,
        "\nclass _Tools(_Namespace):\n",
        '    """gg.tools: the tools gg offers."""\n',
        '    _label = "gg.tools"\n',
    ]
    parts += ["\n" + _py_tool(fn) for fn in tools]
    parts += ["\n\nclass _Session(_Namespace):\n"]
    parts += ['    """gg.session: the ending calls (one returns; the program runs on)."""\n']
    parts += ['    _label = "gg.session"\n']
    parts += ["\n" + _py_ending(fn) for fn in endings]
    parts += ["\n\ntools = _Tools()\nsession = _Session()\n"]
    return "".join(parts)


# ---------------------------------------------------------------- JavaScript


_JS_HEADER = """// gg: the SDK of this program, generated by gg. Every call goes to gg.
export function makeGG(invoke) {
  class CallError extends Error { get name() { return "CallError"; } }
  class ToolError extends CallError { get name() { return "ToolError"; } }
  class EndingRefused extends CallError { get name() { return "EndingRefused"; } }
  class BadCall extends CallError { get name() { return "BadCall"; } }
  const ERRORS = { tool_error: ToolError, ending_refused: EndingRefused, bad_call: BadCall };
  const plain = (v) => v !== null && typeof v === "object" && !Array.isArray(v) &&
    (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
  function named(params, objectFirst, args) {
    if (args.length === 1 && plain(args[0]) && !objectFirst) {
      const sent = {};
      for (const [key, value] of Object.entries(args[0])) {
        const hit = params.find(([name, camel]) => key === name || key === camel);
        if (value !== undefined) sent[hit ? hit[0] : key] = value;
      }
      return sent;
    }
    const sent = {};
    args.forEach((value, i) => {
      if (value !== undefined) sent[i < params.length ? params[i][0] : `argument_${i + 1}`] = value;
    });
    return sent;
  }
  async function call(kind, name, params, objectFirst, args) {
    const answer = await invoke(kind, name, named(params, objectFirst, args));
    if (answer.ok) return answer.value ?? undefined;
    throw new (ERRORS[answer.error_type] ?? CallError)(answer.error || "the call failed");
  }
"""


def _js_comment(text: str) -> str:
    body = text.strip().replace("*/", "* /")
    return "\n".join(f"    // {line}" for line in body.splitlines() if line.strip())


def _js_function(fn: _Function) -> str:
    params = json.dumps([[p.name, _camel(p.name)] for p in fn.params])
    object_first = bool(fn.params) and fn.params[0].schema.get("type") == "object"
    kind, name = json.dumps(fn.kind), json.dumps(fn.call)
    comment = _js_comment(fn.doc)
    return (
        (comment + "\n" if comment else "")
        + f"    {json.dumps(fn.js_name)}: (...args) => "
        + f"call({kind}, {name}, {params}, {str(object_first).lower()}, args),\n"
    )


def _javascript_source(tools: list[_Function], endings: list[_Function]) -> str:
    parts = [_JS_HEADER, "  const tools = Object.freeze({\n"]
    parts += [_js_function(fn) for fn in tools]
    parts += ["  });\n  const session = Object.freeze({\n"]
    parts += [_js_function(fn) for fn in endings]
    parts += [
        "  });\n",
        "  return Object.freeze(\n",
        "    { tools, session, CallError, ToolError, EndingRefused, BadCall });\n",
        "}\n",
    ]
    return "".join(parts)


# ---------------------------------------------------------------- public


def sdk_source(tools: Sequence[ToolSpec], *, language: Language) -> str:
    """The SDK module's source for ``language``, declaring ``tools`` and the three endings.

    Args:
        tools: the arm's registry tools (never the ending calls: those are always added).
        language: ``"python"`` (a module run as ``gg``; it expects ``_transport`` bound by
            the runner) or ``"javascript"`` (an ES module exporting ``makeGG(invoke)``).

    Returns:
        Source text; deterministic for the same tools.

    Raises:
        ValueError: for an unknown language.
    """
    if language not in ("python", "javascript"):
        raise ValueError(f"unknown language {language!r}")
    return _remember(_SOURCES, (language, repr(list(tools))), lambda: _made_source(tools, language))


def _made_source(tools: Sequence[ToolSpec], language: Language) -> str:
    tool_fns, endings = _functions(tools)
    if language == "python":
        return _python_source(tool_fns, endings)
    return _javascript_source(tool_fns, endings)


def _py_literal(value: Any) -> str:
    """``value`` (JSON-able) as Python source: ``"a"``, ``0``, ``False``, ``["x"]``."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_py_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(str(k))}: {_py_literal(v)}" for k, v in value.items())
        return "{" + inner + "}"
    return json.dumps(value)


def _js_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_$][\w$]*", name) else json.dumps(name)


def _example_args(fn: _Function, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    if arguments is not None:
        return dict(arguments)
    if fn.kind == "ending":
        return ENDING_EXAMPLES[fn.call]
    schema = {
        "properties": {p.name: p.schema for p in fn.params},
        "required": [p.name for p in fn.params if p.required],
    }
    return example_arguments(schema)


def _call_line(
    fn: _Function, language: Language, arguments: Mapping[str, Any] | None = None
) -> str:
    """One call of ``fn`` as a statement that compiles (SPEC M2)."""
    args = _example_args(fn, arguments)
    prefix = "gg.tools" if fn.kind == "tool" else "gg.session"
    known = [p for p in fn.params if p.name in args]
    if language == "python":
        inner = ", ".join(f"{p.ident}={_py_literal(args[p.name])}" for p in known)
        return f"{prefix}.{fn.py_name}({inner})"
    if fn.kind == "ending":  # positional in JavaScript: finish(summary), requestChanges(items)
        inner = ", ".join(json.dumps(args[p.name], ensure_ascii=False) for p in known)
    else:
        fields = ", ".join(
            f"{_js_key(p.name)}: {json.dumps(args[p.name], ensure_ascii=False)}" for p in known
        )
        inner = f"{{{fields}}}" if fields else ""
    return f"await {prefix}.{fn.js_name}({inner})"


def _optional_note(fn: _Function, language: Language) -> str:
    optional = [p for p in fn.params if not p.required and fn.kind == "tool"]
    if not optional:
        return ""
    shown = []
    for p in optional:
        value = p.schema.get("default") if "default" in p.schema else None
        name = p.ident if language == "python" else _js_key(p.name)
        lit = _py_literal(value) if language == "python" else json.dumps(value)
        shown.append(f"{name}={lit}" if language == "python" else f"{name}: {lit}")
    return f" (optional: {', '.join(shown)})"


def sdk_call(
    tools: Sequence[ToolSpec],
    name: str,
    *,
    language: Language,
    arguments: Mapping[str, Any] | None = None,
) -> str | None:
    """One call of the SDK as a program line that compiles, for feedback (SPEC S5, M2).

    Args:
        tools: the arm's registry tools (the SDK's naming depends on all of them).
        name: a registry tool's name or an ending call in any spelling.
        language: ``"python"`` or ``"javascript"``.
        arguments: the arguments to show; default: an example
            (:func:`gg.callform.example_arguments`; the endings' own examples).

    Returns:
        ``gg.tools.read_file(path="<path>")`` (Python) or
        ``await gg.tools.readFile({path: "<path>"})`` (JavaScript); ``None`` if the SDK
        has no such call.
    """
    tool_fns, endings = _functions(tools)
    canonical = "request_changes" if name == "requestChanges" else name
    for fn in [*tool_fns, *endings]:
        if fn.call == canonical:
            return _call_line(fn, language, arguments)
    return None


def sdk_signatures(tools: Sequence[ToolSpec], *, language: Language) -> str:
    """The SDK for the prompt: one call per line (SPEC M2).

    Each line is a statement that compiles as it stands (an example call, not an
    annotated stub a model would copy), with its one-line doc and its optional
    parameters in a comment.

    Args:
        tools: the arm's registry tools.
        language: ``"python"`` or ``"javascript"``.

    Returns:
        Lines such as ``gg.tools.read_file(path="<path>")  # Read a file.`` (Python) or
        ``await gg.tools.readFile({path: "<path>"})  // Read a file.`` (JavaScript).

    Raises:
        ValueError: for an unknown language.
    """
    if language not in ("python", "javascript"):
        raise ValueError(f"unknown language {language!r}")
    tool_fns, endings = _functions(tools)
    mark = "#" if language == "python" else "//"
    lines = []
    for fn in [*tool_fns, *endings]:
        doc = (_first_line(fn.doc) + _optional_note(fn, language)).strip()
        sig = _call_line(fn, language)
        lines.append(f"{sig}  {mark} {doc}" if doc else sig)
    return "\n".join(lines)
