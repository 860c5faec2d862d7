r"""The embedded model's prompt and call format, and the grammar of one call (SPEC M5).

:func:`render_prompt` folds gg's conversation into Gemma's two-role chat, and
:func:`describe_tools` tells the model its tools and the call format: one
JSON object on one line,

    {"name": "<tool>", "arguments": {<arguments fitting that tool's schema>}}

with the separators of ``json.dumps`` defaults (``", "`` and ``": "``).
:func:`format_call` writes earlier calls back that way, :func:`parse_call`
reads one, and :func:`tool_call_grammar` builds the GBNF grammar that
constrains sampling to exactly one such call of one offered tool, with
nothing before or after.

The grammar keeps a call short, so that it costs seconds, not minutes:
strings (``max_string`` characters, or ``max_long_string`` for content-like
parameters such as ``content`` and ``program``), arrays (``max_items``),
integers (10 digits), nesting (``max_depth``). Required strings start with a
visible character and required arrays are not empty (``nonempty_required``); a
required content-like string never starts with :data:`MARKER_PREFIX` in any
spelling (a ``\uXXXX`` escape counts as the character it decodes to), and
:func:`marker_argument` holds the same rule on the host, after parsing.

Supported JSON Schema: ``type`` (one or a list), ``properties`` /
``required``, ``additionalProperties``, ``items``, ``minItems`` /
``maxItems``, ``minLength`` / ``maxLength`` (clamped to the caps), ``enum``,
``const``, ``anyOf`` / ``oneOf``, ``allOf`` (properties merged), local
``$ref`` into ``$defs`` / ``definitions``, ``minimum`` / ``maximum`` /
``exclusiveMinimum`` / ``exclusiveMaximum`` (a bounded number is written as
an integer inside the bounds). What it does not promise: ``pattern``,
``format``, ``multipleOf`` and ``uniqueItems`` are ignored, so an argument
may still miss those; an unknown or empty schema admits a bounded JSON scalar.

The grammar text is plain GBNF for llama.cpp (``llama_cpp.LlamaGrammar.
from_string``); nothing here imports llama.cpp.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

from gg.errors import UserError
from gg.models.base import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from gg.text import cut

__all__ = [
    "CHAT_MARKERS",
    "LONG_STRING_PARAMS",
    "MARKER_PARAMS",
    "REPETITION_LIMIT",
    "GrammarLimits",
    "describe_tools",
    "format_call",
    "gbnf_literal",
    "marker_argument",
    "parse_call",
    "render_prompt",
    "tool_call_grammar",
]

REPETITION_LIMIT = 2000
"""llama.cpp refuses a bounded repetition ``x{0,n}`` with ``n`` above this."""

LONG_STRING_PARAMS = frozenset({"content", "program", "code", "text", "body", "patch"})
"""Parameter names whose string values get the long cap (file bodies, programs)."""

_CHAR = r'[^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
_LEAD = r'[^"\\\x00-\x20]'
_ESCAPE = r'"\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
MARKER_PREFIX = "<tool_"
"""No required content-like argument (``content``, ``program``...) starts with this: it
opens the chat templates' own markers (``<tool_call>``, ``<tool_response>``), which a small
model echoes into an argument instead of a value (Qwen2.5-Coder 1.5B wrote
``<tool_response>...`` as a file's content; issue 16)."""


CHAT_MARKERS = (
    "<tool_",
    "</tool_",
    "<|im_start|>",
    "<|im_end|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<|start_header_id|>",
    "<|eot_id|>",
)
"""Chat-template markers a content-like argument must not start with (after leading
whitespace), checked on the decoded value after parsing (:func:`marker_argument`): the
grammar's :data:`MARKER_PREFIX` rule, held on the host whatever escapes spelled it."""


MARKER_PARAMS = LONG_STRING_PARAMS | {"new", "old", "new_string", "old_string"}
"""Arguments :func:`marker_argument` checks: the content-like ones and ``edit_file``'s."""

_INVISIBLE = frozenset({"Cc", "Cf", "Mn", "Me", "Zs", "Zl", "Zp"})
"""Unicode categories skipped before a marker: controls, format characters (zero-width
space, BOM, word joiner), combining marks (U+034F) and every kind of space."""


def _visible_head(value: str, size: int = 32) -> str:
    """The first ``size`` characters of ``value`` past any invisible ones, casefolded."""
    start = 0
    while start < len(value) and (
        value[start].isspace() or unicodedata.category(value[start]) in _INVISIBLE
    ):
        start += 1
    return value[start : start + size].casefold()


def marker_argument(arguments: dict[str, Any]) -> tuple[str, str] | None:
    r"""The first content-like argument whose decoded value starts with a chat-template marker.

    Content-like: a top-level string argument named in :data:`MARKER_PARAMS`
    (``content``, ``program``, ``edit_file``'s ``new``...). The value is the decoded one
    (``"\u003ctool_"`` is ``"<tool_"``); leading white space, controls, format
    characters (``\u200b``, ``\ufeff``) and combining marks are skipped, and case is
    ignored (``<TOOL_RESPONSE>``), so no spelling of a marker gets through.

    Args:
        arguments: a call's decoded arguments.

    Returns:
        ``(argument name, marker)``, or ``None`` when no such argument starts with one
        of :data:`CHAT_MARKERS`.
    """
    for key, value in arguments.items():
        if key in MARKER_PARAMS and isinstance(value, str):
            head = _visible_head(value)
            for marker in CHAT_MARKERS:
                if head.startswith(marker.casefold()):
                    return key, marker
    return None


def _lead_rules(prefix: str) -> dict[str, str]:
    r"""GBNF rules ``lead``, ``lead-1``...: a visible first character, never spelling ``prefix``.

    The rule holds on the decoded value: the first character is never an escape, and past
    it a ``\uXXXX`` escape of the prefix's next character (``<\u0074ool_``, any case of
    hex digits) counts as that character, so no spelling of the prefix gets through.

    ``lead`` may take up to ``len(prefix)`` characters (a string that starts like the prefix
    and then leaves it), so a required string can be that many characters past its cap. A
    string that is a proper prefix of ``prefix`` and nothing more (``"<"``) is
    :func:`_prefix_strings`' part.
    """
    rules: dict[str, str] = {}
    for depth, ch in enumerate(prefix):
        lit = gbnf_literal(ch)
        klass = '[^"\\\\\\x00-\\x20' if depth == 0 else '[^"\\\\\\x00-\\x1f'
        other = f"{klass}{re.escape(ch) if ch in '^]-' else ch}]"
        alts = [other] if depth == 0 else [other, _escape_except(ch)]
        if depth + 1 < len(prefix):
            same = lit if depth == 0 else f"({lit} | {_escape_of(ch)})"
            alts.append(f"{same} lead-{depth + 1}")
        rules["lead" if depth == 0 else f"lead-{depth}"] = " | ".join(alts)
    return rules


_HEX = "0123456789abcdef"


def _hex_digit(digit: str, *, other: bool = False) -> str:
    """A GBNF class of the hex digit ``digit`` in either case (``other``: any but it)."""
    chars = [d for d in _HEX if (d != digit) == other]
    return "[" + "".join(dict.fromkeys(c for d in chars for c in (d, d.upper()))) + "]"


def _escape_of(ch: str) -> str:
    r"""GBNF for the ``\uXXXX`` escapes that decode to ``ch`` (a BMP character)."""
    code = f"{ord(ch):04x}"
    return '"\\\\u" ' + " ".join(_hex_digit(d) for d in code)


def _escape_except(ch: str) -> str:
    """GBNF for every JSON escape except those that decode to ``ch``."""
    code = f"{ord(ch):04x}"
    short = [e for e in '"\\/bfnrt' if json.loads(f'"\\{e}"') != ch]
    alts = []
    for i in range(4):
        same = [_hex_digit(d) for d in code[:i]]
        rest = ["[0-9a-fA-F]"] * (3 - i)
        alts.append(" ".join([*same, _hex_digit(code[i], other=True), *rest]))
    klass = "".join("\\\\" if e == "\\" else e for e in short)
    return f'"\\\\" ([{klass}] | "u" ({" | ".join(alts)}))'


def _prefix_strings(prefix: str, low: int) -> str:
    """GBNF alternatives: the proper prefixes of ``prefix`` at least ``low`` long, or ``""``."""
    return " | ".join(gbnf_literal(prefix[:n]) for n in range(max(low, 1), len(prefix)))


_INTEGER = '"-"? ("0" | [1-9] [0-9]{0,9})'
_INT_CAP = 10**10 - 1
"""Largest magnitude of an integer without a bound in its schema (10 digits)."""
_NUMBER = 'integer ("." [0-9]{1,6})?'
_RESULT_CAP = 6000
"""Longest tool result or message put in the prompt, in characters (the middle is cut)."""
_GBNF_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True, slots=True, kw_only=True)
class GrammarLimits:
    """Bounds on what a constrained call may contain.

    Attributes:
        max_string: longest ordinary string value, in characters.
        max_long_string: longest value of a parameter named in ``long_params``,
            in characters (at most :data:`REPETITION_LIMIT`).
        long_params: parameter names that get ``max_long_string``.
        max_items: most items in an array, or keys in a free-form object.
        max_depth: deepest nesting of arrays and objects inside the arguments;
            deeper schemas admit a JSON scalar.
        nonempty_required: required string parameters must start with a
            visible character, and required arrays hold at least one item
            (so ``finish`` gets a summary and ``request_changes`` an item,
            SPEC S4).
    """

    max_string: int = 200
    max_long_string: int = 1500
    long_params: frozenset[str] = field(default=LONG_STRING_PARAMS)
    max_items: int = 16
    max_depth: int = 6
    nonempty_required: bool = True

    def __post_init__(self) -> None:
        for name in ("max_string", "max_long_string", "max_items"):
            value = getattr(self, name)
            if not 1 <= value <= REPETITION_LIMIT:
                raise UserError(f"{name}={value!r} must be within 1..{REPETITION_LIMIT}")


def gbnf_literal(text: str) -> str:
    """Quote ``text`` as a GBNF string literal (``"..."`` with escapes)."""
    out = []
    for ch in text:
        if ch in _GBNF_ESCAPES:
            out.append(_GBNF_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def tool_call_grammar(tools: Sequence[ToolSpec], *, limits: GrammarLimits | None = None) -> str:
    """Build the GBNF grammar of one call of one of ``tools``.

    Args:
        tools: the offered tools (at least one); names must be distinct.
        limits: bounds on strings, arrays and nesting; defaults to
            :class:`GrammarLimits()`.

    Returns:
        GBNF text whose ``root`` rule admits exactly
        ``{"name": <one tool's name>, "arguments": <object fitting its schema>}``.

    Raises:
        gg.errors.UserError: when ``tools`` is empty or names a tool twice.
    """
    if not tools:
        raise UserError("a tool-call grammar needs at least one tool")
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise UserError(f"tool names must be distinct, got {names!r}")
    builder = _Builder(limits or GrammarLimits())
    calls = [builder.call_rule(tool) for tool in tools]
    builder.rules["root"] = " | ".join(calls)
    return builder.render()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Want:
    """What the schema being visited is for: its nesting depth, and the caps that apply."""

    depth: int
    long: bool = False
    """A content-like parameter: strings get ``max_long_string``."""
    nonempty: bool = False
    """A required parameter: strings start with a visible character, arrays hold an item."""


class _Builder:
    """Turns JSON schemas into named GBNF rules, sharing identical ones."""

    def __init__(self, limits: GrammarLimits) -> None:
        self.limits = limits
        self.rules: dict[str, str] = {
            "char": _CHAR,
            **_lead_rules(MARKER_PREFIX),
            "lead-plain": _LEAD,
            "integer": _INTEGER,
            "number": _NUMBER,
            "boolean": '"true" | "false"',
            "null": '"null"',
        }
        self._by_body: dict[str, str] = {body: name for name, body in self.rules.items()}
        self._defs: dict[str, Any] = {}
        self._refs: dict[str, str] = {}

    def render(self) -> str:
        """The grammar text, ``root`` first, one rule per line."""
        order = ["root", *sorted(name for name in self.rules if name != "root")]
        return "".join(f"{name} ::= {self.rules[name]}\n" for name in order)

    def add(self, hint: str, body: str) -> str:
        """Add a rule (or reuse one with the same body) and return its name."""
        if body in self._by_body:
            return self._by_body[body]
        base = re.sub(r"[^a-zA-Z0-9]+", "-", hint).strip("-").lower() or "r"
        name, n = base, 1
        while name in self.rules:
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = body
        self._by_body[body] = name
        return name

    def call_rule(self, tool: ToolSpec) -> str:
        """The rule for one call of ``tool``."""
        params = tool.parameters if isinstance(tool.parameters, dict) else {}
        self._defs = {**params.get("definitions", {}), **params.get("$defs", {})}
        self._refs = {}
        if "properties" not in params and "additionalProperties" not in params:
            params = {**params, "additionalProperties": False}  # a tool without parameters
        args = self.object_rule(params, f"{tool.name}-args", _Want(depth=0))
        head = gbnf_literal(f'{{"name": {json.dumps(tool.name)}, "arguments": ')
        return self.add(f"call-{tool.name}", f'{head} {args} "}}"')

    def visit(self, schema: Any, hint: str, want: _Want) -> str:
        """The name of a rule admitting the JSON values ``schema`` allows."""
        if not isinstance(schema, dict):
            return self.scalar_rule()
        if "$ref" in schema:
            return self.ref_rule(str(schema["$ref"]), want)
        if "const" in schema:
            return self.add(f"{hint}-const", gbnf_literal(json.dumps(schema["const"])))
        if "enum" in schema:
            alts = " | ".join(gbnf_literal(json.dumps(v)) for v in schema["enum"])
            return self.add(f"{hint}-enum", alts or '"null"')
        options = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(options, list):
            return self.union_rule(options, hint, want)
        if isinstance(schema.get("allOf"), list):
            return self.visit(_merge_all_of(schema), hint, want)
        kind = schema.get("type")
        if isinstance(kind, list):
            return self.union_rule([{**schema, "type": k} for k in kind], hint, want)
        return self.typed_rule(schema, str(kind or ""), hint, want)

    def union_rule(self, options: list[Any], hint: str, want: _Want) -> str:
        """Any of ``options`` (``anyOf``, ``oneOf``, a list of types)."""
        alts = [self.visit(option, f"{hint}-{i}", want) for i, option in enumerate(options)]
        return self.add(f"{hint}-alt", " | ".join(dict.fromkeys(alts)))

    def typed_rule(self, schema: dict[str, Any], kind: str, hint: str, want: _Want) -> str:
        """The rule for a schema with a single (or inferred) ``type``."""
        if not kind:
            kind = "object" if "properties" in schema else "array" if "items" in schema else ""
        if kind == "string":
            return self.string_rule(schema, long=want.long, nonempty=want.nonempty)
        if kind in ("integer", "number"):
            return self.number_rule(schema, integer=kind == "integer")
        if kind in ("boolean", "null"):
            return kind
        if want.depth >= self.limits.max_depth or kind not in ("object", "array"):
            return self.scalar_rule()
        deeper = _Want(depth=want.depth + 1, nonempty=want.nonempty)
        if kind == "array":
            return self.array_rule(schema, hint, deeper)
        return self.object_rule(schema, hint, deeper)

    def string_rule(self, schema: dict[str, Any], *, long: bool, nonempty: bool = False) -> str:
        """A JSON string of bounded length; ``nonempty``: starting with a visible character."""
        cap = self.limits.max_long_string if long else self.limits.max_string
        top = min(int(schema.get("maxLength", cap)), cap)
        low = min(max(int(schema.get("minLength", 0)), int(nonempty)), top)
        if low == 0:
            return self.add(f"string-{top}", f'"\\"" char{{0,{top}}} "\\""')
        if long and low == 1 and top > 2 * len(MARKER_PREFIX):
            # a content-like value: never a template marker's start (at most a few
            # characters past ``top``: the lead's own)
            short = _prefix_strings(MARKER_PREFIX, low)
            body = f'"\\"" (lead char{{0,{top - 1}}} | {short}) "\\""'
            return self.add(f"text-{low}-{top}", body)
        body = f'"\\"" lead-plain char{{{low - 1},{top - 1}}} "\\""'
        return self.add(f"string-{low}-{top}", body)

    def number_rule(self, schema: dict[str, Any], *, integer: bool) -> str:
        """A JSON number; with a bound in the schema, an integer inside the bounds."""
        lo, hi = _int_bounds(schema)
        if lo is None and hi is None:
            return "integer" if integer else "number"
        low, high = -_INT_CAP if lo is None else lo, _INT_CAP if hi is None else hi
        if low > high:
            return "integer"  # no integer fits: leave it to the tool to refuse
        return self.add(f"int-{low}-{high}", _int_range(low, high))

    def scalar_rule(self) -> str:
        """Any bounded JSON scalar: the fallback for unknown or too-deep schemas."""
        string = self.string_rule({}, long=False)
        return self.add("scalar", f"{string} | number | boolean | null")

    def ref_rule(self, ref: str, want: _Want) -> str:
        """A local ``$ref``; a recursive schema becomes a recursive rule."""
        if ref in self._refs:
            return self._refs[ref]
        key = ref.rsplit("/", 1)[-1]
        target = self._defs.get(key) if ref.startswith("#/") else None
        if target is None:
            return self.scalar_rule()
        name = self.add(f"ref-{key}", f"<{ref}>")  # placeholder body, replaced below
        del self._by_body[f"<{ref}>"]
        self._refs[ref] = name
        self.rules[name] = self.visit(target, f"def-{key}", want)
        return name

    def array_rule(self, schema: dict[str, Any], hint: str, want: _Want) -> str:
        """A JSON array of bounded length; ``want.nonempty``: at least one non-empty item."""
        items = schema.get("items")
        item = self.visit(items if isinstance(items, dict) else {}, f"{hint}-item", want)
        top = min(int(schema.get("maxItems", self.limits.max_items)), self.limits.max_items)
        low = min(max(int(schema.get("minItems", 0)), int(want.nonempty)), top)
        if top == 0:
            return self.add(f"{hint}-empty", '"[]"')
        more = self.add(f"{hint}-more", f'", " {item}')
        inner = f"{item} {more}{{{max(low - 1, 0)},{top - 1}}}"
        body = f'"[" {inner} "]"' if low >= 1 else f'"[" ({inner})? "]"'
        return self.add(f"{hint}-array", body)

    def object_rule(self, schema: dict[str, Any], hint: str, want: _Want) -> str:
        """A JSON object: declared properties in order, required ones mandatory."""
        props = schema.get("properties") or {}
        if not isinstance(props, dict) or not props:
            if "properties" in schema and "additionalProperties" not in schema:
                return self.add("empty-object", '"{}"')
            return self.free_object_rule(schema, hint, want)
        required = set(schema.get("required") or ())
        kvs: list[tuple[str, bool]] = []
        for key, sub in props.items():
            nonempty = self.limits.nonempty_required and key in required
            sub_want = _Want(
                depth=want.depth, long=key in self.limits.long_params, nonempty=nonempty
            )
            value = self.visit(sub, f"{hint}-{key}", sub_want)
            kv = self.add(f"{hint}-{key}-kv", f"{gbnf_literal(json.dumps(key) + ': ')} {value}")
            kvs.append((kv, key in required))
        return self.add(f"{hint}-object", f'"{{" {self._sequence(kvs, hint)} "}}"')

    def _sequence(self, kvs: list[tuple[str, bool]], hint: str) -> str:
        """Key-value rules in order, ``", "``-separated, optional ones skippable.

        Built from the end: ``after`` admits the pairs from ``i`` on once one
        pair is written (each preceded by a comma); ``start`` names the rule of
        the pairs from ``i`` on with at least one written and no leading comma.
        """
        after = ""
        start = ""  # body of the rule for the pairs after i
        for i in range(len(kvs) - 1, -1, -1):
            kv, is_required = kvs[i]
            own = f"{kv} {after}".strip()
            if is_required or not start:
                start = own
            else:
                start = f"{own} | {self.add(f'{hint}-from-{i + 1}', start)}"
            link = f'", " {kv}'
            after = f"{link if is_required else f'({link})?'} {after}".strip()
        first = self.add(f"{hint}-from-0", start)
        return first if any(is_required for _, is_required in kvs) else f"{first}?"

    def free_object_rule(self, schema: dict[str, Any], hint: str, want: _Want) -> str:
        """An object without declared properties: bounded string keys."""
        extra = schema.get("additionalProperties", True)
        if extra is False:
            return self.add("empty-object", '"{}"')
        value = self.visit(extra if isinstance(extra, dict) else {}, f"{hint}-value", want)
        key = self.string_rule({}, long=False)
        kv = self.add(f"{hint}-kv", f'{key} ": " {value}')
        more = self.add(f"{hint}-kv-more", f'", " {kv}')
        top = self.limits.max_items - 1
        return self.add(f"{hint}-map", f'"{{" ({kv} {more}{{0,{top}}})? "}}"')


def _int_bounds(schema: dict[str, Any]) -> tuple[int | None, int | None]:
    """The integer bounds a schema's ``minimum``/``maximum``/``exclusive*`` allow."""

    def number(key: str) -> float | None:
        value = schema.get(key)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    lows = [math.ceil(v) for v in [number("minimum")] if v is not None]
    lows += [math.floor(v) + 1 for v in [number("exclusiveMinimum")] if v is not None]
    highs = [math.floor(v) for v in [number("maximum")] if v is not None]
    highs += [math.ceil(v) - 1 for v in [number("exclusiveMaximum")] if v is not None]
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _int_range(lo: int, hi: int) -> str:
    """GBNF for the decimal integers from ``lo`` to ``hi`` (no leading zeros, ``-`` sign)."""
    alts: list[str] = []
    if lo < 0:
        negative = _uint_range(max(1, -min(hi, -1)), -lo)
        alts.append(f'"-" ({negative})')
    if hi >= 0:
        alts.append(_uint_range(max(lo, 0), hi))
    return " | ".join(alts)


def _uint_range(lo: int, hi: int) -> str:
    """GBNF for the integers ``lo..hi`` (``0 <= lo <= hi``), split by digit count."""
    alts: list[str] = []
    for width in range(len(str(lo)), len(str(hi)) + 1):
        a = max(lo, 10 ** (width - 1) if width > 1 else 0)
        b = min(hi, 10**width - 1)
        alts.extend(_same_width(str(a), str(b)))
    return " | ".join(alts)


def _same_width(lo: str, hi: str) -> list[str]:
    """Sequences for the digit strings from ``lo`` to ``hi`` (same length, ``lo <= hi``)."""
    if not lo:
        return [""]
    rest = len(lo) - 1
    tail = f" [0-9]{{{rest}}}" if rest else ""
    if lo == "0" * len(lo) and hi == "9" * len(hi):
        return [f"[0-9]{tail}"]
    if lo[0] == hi[0]:
        return [f'"{lo[0]}" {s}'.strip() for s in _same_width(lo[1:], hi[1:])]
    out = [f'"{lo[0]}" {s}'.strip() for s in _same_width(lo[1:], "9" * rest)]
    if int(hi[0]) - int(lo[0]) > 1:
        out.append(f"[{int(lo[0]) + 1}-{int(hi[0]) - 1}]{tail}")
    out += [f'"{hi[0]}" {s}'.strip() for s in _same_width("0" * rest, hi[1:])]
    return out


def _merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Merge the ``properties`` and ``required`` of an ``allOf`` into one object schema."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for part in schema.get("allOf", []):
        if isinstance(part, dict):
            props.update(part.get("properties") or {})
            required.extend(part.get("required") or ())
    rest = {k: v for k, v in schema.items() if k != "allOf"}
    return {**rest, "type": "object", "properties": props, "required": required}


def describe_tools(tools: Sequence[ToolSpec]) -> str:
    """The offered tools and the exact call format, as prompt text for the model.

    Returns:
        A paragraph stating the one-line JSON call format, then one line per
        tool, ``- name(param: type, opt: type = default): description``, with
        an indented line for each described parameter.
    """
    listing = "\n".join(_describe_tool(tool) for tool in tools)
    return (
        "You act only by calling tools. Each reply of yours is exactly one tool call, "
        "written as one JSON object on one line:\n"
        '{"name": "<tool name>", "arguments": {"<parameter>": <value>, ...}}\n\n'
        f"Tools:\n{listing}"
    )


def format_call(call: ToolCall) -> str:
    """An earlier call written back in the call format (raw arguments kept as they were)."""
    if isinstance(call.arguments, str):
        return f'{{"name": {json.dumps(call.name)}, "arguments": {call.arguments}}}'
    return json.dumps({"name": call.name, "arguments": call.arguments})


def parse_call(text: str) -> tuple[str, dict[str, Any] | str, bool]:
    """Read one call in the call format.

    Returns:
        ``(name, arguments, complete)``: for a complete call, its name and
        decoded arguments; otherwise the name when the head of the call was
        written (else ``""``), the raw text of the arguments, and ``False``.
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # too deep: the model boundary says so (issue 9 F4)
        data = None
    if isinstance(data, dict) and isinstance(data.get("arguments"), dict):
        return str(data.get("name", "")), data["arguments"], True
    head = re.match(r'\{"name": ("(?:[^"\\]|\\.)*"), "arguments": ', text)
    if head is None:
        return "", text, False
    return str(json.loads(head.group(1))), text[head.end() :], False


def _clip(text: str, cap: int = _RESULT_CAP) -> str:
    """``text`` with its middle cut when it is longer than ``cap`` characters."""
    return cut(text, cap, keep="middle")


def _message_turn(message: Message) -> tuple[str, str]:
    """One message as ``(gemma_role, text)``; system and tool results become user text."""
    match message:
        case SystemMessage(content=content):
            return "user", content.strip()
        case UserMessage(content=content):
            return "user", _clip(content.strip())
        case AssistantMessage(content=content, tool_calls=calls):
            lines = [content.strip()] if content.strip() else []
            return "model", "\n".join([*lines, *(format_call(c) for c in calls)])
        case ToolMessage(name=name, content=content):
            return "user", f"Result of {name}:\n{_clip(content.strip()) or '(empty)'}"
        case _:
            assert_never(message)


def render_prompt(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[tuple[str, str]]:
    """Fold gg's conversation into Gemma's two-role chat.

    Gemma has only ``user`` and ``model`` turns: the system prompt and the
    tool list open the first user turn, tool results are user text
    (``Result of <tool>:``), earlier calls are written back as JSON lines, and
    consecutive items of one role merge into one turn. When tools are
    offered, the last user turn ends with a reminder of their names.

    Args:
        messages: the conversation, oldest first.
        tools: the offered tools (may be empty).

    Returns:
        ``[(role, text), ...]`` with roles alternating, starting with
        ``"user"``; the caller adds the open ``model`` turn.
    """
    system = [m.content.strip() for m in messages if isinstance(m, SystemMessage)]
    rest = [_message_turn(m) for m in messages if not isinstance(m, SystemMessage)]
    head = "\n\n".join([*system, *([describe_tools(tools)] if tools else [])])
    if head:
        rest.insert(0, ("user", head))
    turns: list[tuple[str, str]] = []
    for role, text in rest:
        if turns and turns[-1][0] == role:
            turns[-1] = (role, f"{turns[-1][1]}\n\n{text}")
        else:
            turns.append((role, text))
    if not turns or turns[0][0] != "user":
        turns.insert(0, ("user", "Begin."))
    if turns[-1][0] != "user":
        turns.append(("user", "Continue."))
    if tools:
        names = ", ".join(tool.name for tool in tools)
        turns[-1] = ("user", f"{turns[-1][1]}\n\n(Reply with one tool call: {names}.)")
    return turns


def _type_name(schema: Any) -> str:
    """A short type for a parameter list: ``string``, ``array of string``, ``a | b``."""
    if not isinstance(schema, dict):
        return "value"
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    alts = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alts, list):
        return " | ".join(dict.fromkeys(_type_name(s) for s in alts))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        return f"array of {_type_name(schema.get('items', {}))}"
    return str(kind or "value")


def _describe_tool(tool: ToolSpec) -> str:
    """One tool as ``- name(param: type, opt: type = default): summary`` plus param notes.

    The summary is the description's first paragraph: a small model does
    better with less to read.
    """
    props = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or ())
    params, notes = [], []
    for key, sub in props.items():
        sub = sub if isinstance(sub, dict) else {}
        default = (
            "" if key in required or "default" not in sub else f" = {json.dumps(sub['default'])}"
        )
        params.append(f"{key}: {_type_name(sub)}{default}")
        if sub.get("description"):
            notes.append(f"    {key}: {sub['description']}")
    summary = tool.description.strip().split("\n\n", 1)[0].replace("\n", " ")
    head = f"- {tool.name}({', '.join(params)}): {summary}"
    return "\n".join([head, *notes])
