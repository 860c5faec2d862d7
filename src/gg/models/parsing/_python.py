"""Python-like tool-call formats (SPEC M5).

``pythonic`` lists ``[f(a=1)]``, Llama 3.1's ``<|python_tag|>`` (JSON or
``tool.call(k=v)``), and Gemma's ``call:F{k:v}`` (FunctionGemma, Gemma 4).
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import Any, Literal

from gg.models.base import ToolCall
from gg.models.parsing._common import (
    _NOTHING,
    _WS,
    _Broken,
    _end,
    _excerpt,
    _literal,
    _loads,
    _Names,
    _Scan,
)
from gg.models.parsing._json import _json_scan

# --- Python-style calls: pythonic lists, <|python_tag|> -------------------------------------

_MAX_PYTHON_CHARS = 100_000
"""The longest Python-style call text handed to :func:`ast.parse` (1 MB of ``1,`` costs
gg about 480 MB of syntax tree: hostile text must not)."""

_PY_WRAP = re.compile(r"<\|python_start\|>(.*?)(?:<\|python_end\|>|\Z)", re.S)
_PY_LIST = re.compile(r"\[\s*[A-Za-z_][\w.]*\(")
_PY_TAG = re.compile(
    r"<\|python_tag\|>(.*?)(?:<\|eom_id\|>|<\|eot_id\|>|(?=<\|python_tag\|>)|\Z)", re.S
)


def _parse_pythonic(text: str, names: _Names) -> _Scan:
    """``[f(a=1), g(b="x")]``: in ``<|python_start|>``, else first ``[F(`` to last ``]``."""
    wrap = _PY_WRAP.search(text)
    first = _PY_LIST.search(text)
    if wrap is None and first is None:
        return _Scan()
    scan = _Scan(spans=[wrap.span()] if wrap else [])
    start, end = wrap.span(1) if wrap else (first.start() if first else 0, text.rfind("]") + 1)
    end = end if end > start else len(text)
    scan.add(_python_scan(text[start:end], "eval"), start)
    return scan


def _parse_python_tag(text: str, names: _Names) -> _Scan:
    """Llama 3.1 ``<|python_tag|>`` + JSON calls or ``tool.call(k=v)`` statements."""
    scan = _Scan()
    for m in _PY_TAG.finditer(text):
        body = m.group(1)
        sub = (
            _json_scan(body, "the JSON after <|python_tag|>")
            if body.lstrip().startswith(("{", "["))
            else _python_scan(body, "exec")
        )
        sub.calls = [replace(c, name=c.name.removesuffix(".call")) for c in sub.calls]
        scan.add(sub, m.start(1))
        scan.spans.append(m.span())
    return scan


def _python_scan(source: str, mode: Literal["eval", "exec"]) -> _Scan:
    """Calls in Python syntax: a list of calls (``eval``) or call statements (``exec``)."""
    if len(source) > _MAX_PYTHON_CHARS:
        return _Scan(
            error=f"the Python-style tool calls are {len(source)} characters long (gg "
            f"reads at most {_MAX_PYTHON_CHARS} in this form; send JSON instead)"
        )
    try:
        tree = ast.parse(source.strip(), mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        return _Scan(
            error=f"the Python-style tool calls are not valid Python ({reason}): "
            f"{_excerpt(source.strip())}"
        )
    nodes: list[ast.AST] = []
    if isinstance(tree, ast.Expression):
        nodes = list(tree.body.elts) if isinstance(tree.body, ast.List) else [tree.body]
    elif isinstance(tree, ast.Module):
        nodes = [s.value if isinstance(s, ast.Expr) else s for s in tree.body]
    if not nodes:
        return _Scan(error=f"the Python-style tool calls hold no call: {_excerpt(source)}")
    try:
        return _Scan(calls=[_py_call(node) for node in nodes], spans=[(0, len(source))])
    except _Broken as exc:
        return _Scan(error=f"the Python-style tool calls hold {exc.reason}")


def _py_call(node: ast.AST) -> ToolCall:
    """One ``F(key=literal, ...)`` call (F may be dotted); other arguments: ``parse_error``.

    Raises:
        _Broken: the node is not a call of a name.
    """
    func = node.func if isinstance(node, ast.Call) else None
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(node, ast.Call) or not isinstance(func, ast.Name):
        raise _Broken(f"something that is not a tool call: {_excerpt(ast.unparse(node))}")
    name = ".".join([func.id, *parts])
    try:
        if node.args or any(k.arg is None for k in node.keywords):
            raise ValueError("only name=value arguments are allowed")
        args = {str(k.arg): _literal(k.value) for k in node.keywords}
    except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
        return ToolCall(
            name=name,
            arguments=ast.unparse(node),
            parse_error=(f"the arguments of {name!r} are not literal name=value pairs ({exc})"),
        )
    return ToolCall(name=name, arguments=args)


# --- Gemma: FunctionGemma, Gemma 4 ----------------------------------------------------------

_GEMMA_CALL = re.compile(r"call:([\w.\-]+)\{")
_GEMMA_NOISE = re.compile(r"<start_function_call>|<end_function_call>|<\|tool_call>|<tool_call\|>")
_GEMMA_QUOTES = ('<|"|>', "<escape>")
_GEMMA_KEY = re.compile(
    r'\s*(?:<\|"\|>(.*?)<\|"\|>|<escape>(.*?)<escape>|([^:{}\[\],<]+?))\s*:', re.S
)
_GEMMA_SCALAR = re.compile(r"[^,}\]]*")


def _parse_gemma(text: str, names: _Names) -> _Scan:
    """``call:F{key:value,...}``; a call whose arguments do not read has ``parse_error``."""
    scan, pos = _Scan(spans=[m.span() for m in _GEMMA_NOISE.finditer(text)]), 0
    while (m := _GEMMA_CALL.search(text, pos)) is not None:
        name = m.group(1)
        try:
            args, end = _gemma_value(text, m.end() - 1, 0)
            call = ToolCall(name=name, arguments=args)
        except _Broken as exc:
            stop = _GEMMA_NOISE.search(text, m.end())
            end = stop.start() if stop else len(text)
            call = ToolCall(
                name=name,
                arguments=text[m.end() - 1 : end],
                parse_error=f"the arguments of {name!r} are {exc.reason}",
            )
        scan.calls.append(call)
        scan.spans.append((m.start(), end))
        pos = max(end, m.end())
    return scan


def _gemma_value(text: str, pos: int, depth: int) -> tuple[Any, int]:
    """One Gemma value at ``pos`` (object, list, quoted string, or scalar read as JSON).

    Raises:
        _Broken: cut off, too deep, or not ``key:value`` pairs.
    """
    pos = _end(_WS, text, pos)
    quote = next((q for q in _GEMMA_QUOTES if text.startswith(q, pos)), None)
    if quote is not None:
        close = text.find(quote, pos + len(quote))
        if close < 0:
            raise _Broken("cut off inside a string", cut=True)
        return text[pos + len(quote) : close], close + len(quote)
    if text.startswith(("{", "["), pos):
        if depth > 100:
            raise _Broken("nested too deeply to read")
        return _gemma_items(text, pos, depth)
    scalar = _GEMMA_SCALAR.match(text, pos)
    word = scalar.group().strip() if scalar else ""
    if not scalar or not word:
        raise _Broken(f"missing a value at {_excerpt(text[pos : pos + 40])}", cut=pos >= len(text))
    value = _loads(word)
    return (word if value is _NOTHING else value), scalar.end()


def _gemma_items(text: str, pos: int, depth: int) -> tuple[Any, int]:
    """The Gemma object (a dict) or list opening at ``pos``, and the index after it."""
    close = "}" if text[pos] == "{" else "]"
    items: list[Any] = []
    pos += 1
    while True:
        pos = _end(_WS, text, pos)
        if pos >= len(text):
            raise _Broken(f"cut off before the closing {close}", cut=True)
        if text[pos] == close:
            return (dict(items) if close == "}" else items), pos + 1
        key = _GEMMA_KEY.match(text, pos) if close == "}" else None
        if close == "}" and key is None:
            raise _Broken(f"not key:value pairs at {_excerpt(text[pos : pos + 40])}")
        value, pos = _gemma_value(text, key.end() if key else pos, depth + 1)
        items.append(
            (next(g for g in key.groups() if g is not None).strip(), value) if key else value
        )
        pos = _end(_WS, text, pos)
        pos += text.startswith(",", pos)
