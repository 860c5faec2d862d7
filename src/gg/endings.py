"""The ending protocol: roles, ending groups, typed endings, the check, declarations.

This module is the one place that decides whether an ending call is allowed,
well-shaped, and which declaration counts (SPEC S1-S4, S7, S8, S9, S11, S13).
It knows nothing of models, execution modes, sandboxes or the board: both
modes call :func:`check_ending` and keep a :class:`Declarations`.

The rule, in order (SPEC S3, S4):

1. **Role before shape.** A call outside the caller's ending group is refused
   as ``unavailable`` before its arguments are looked at, with a message that
   names the endings the caller does have.
2. **Shape.** ``finish`` needs a non-empty summary after trimming;
   ``request_changes`` trims its items, drops blank ones, then needs at least
   one; ``approve`` takes nothing. A refusal says what to send instead.
   Before the shape is looked at, harmless extra keys are dropped (a small
   model echoes schema words such as ``"type": "string"`` or
   ``"description"`` beside its arguments) and an echoed schema wrapper
   (``{"type": "object", "properties": {"summary": ...}}``) is unwrapped; the
   shape rules themselves are unchanged, and ``approve`` given non-blank
   ``items`` is refused (it would turn a request for changes into an
   approval). :func:`ending_from_record` stays strict.

An on-use script (SPEC S13) is checked with ``role=None``: it has no ending
group, so every ending call from it is refused as unavailable.

**A typed ending payload** (issue 14 item 4): a session given an
:class:`OutputType` has a ``finish`` that carries ``output`` beside its
``summary``. The offered ``finish`` schema includes the output's JSON Schema
(:func:`ending_tool_specs`), and an output that is missing or does not validate
is refused by shape like any other S4 refusal, naming the problems; the
accepted :class:`Finish` holds the validated value (a model instance).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal, TypeAlias, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

__all__ = [
    "ENDING_CALLS",
    "Approve",
    "Declarations",
    "Ending",
    "EndingRecord",
    "Finish",
    "Language",
    "OutputType",
    "Refusal",
    "RequestChanges",
    "Role",
    "TurnClose",
    "canonical_call",
    "check_ending",
    "ending_from_record",
    "ending_group",
    "ending_tool_specs",
    "is_ending_name",
    "spell",
]

Language: TypeAlias = Literal["python", "javascript"]
"""How a call is spelled in messages: tool-calling and Python use ``request_changes``,
JavaScript uses ``requestChanges`` (SPEC §10 Programs)."""


class Role(StrEnum):
    """The role a session was dispatched in; it decides the ending group (SPEC S2)."""

    STANDARD = "standard"
    """Does work and reports it: root agent, subagent, implementer, merge agent."""
    REVIEW = "review"
    """Gives a verdict: an issue's reviewers."""


ENDING_CALLS: tuple[str, ...] = ("finish", "approve", "request_changes")
"""The three ending calls, in their canonical (Python) spelling. Never registry tools."""

_GROUPS: dict[Role, tuple[str, ...]] = {
    Role.STANDARD: ("finish",),
    Role.REVIEW: ("approve", "request_changes"),
}
_ALIASES = {"requestChanges": "request_changes"}

EndingRecord: TypeAlias = dict[str, Any]
"""An ending as one JSON object: ``{"call": "finish", "summary": ...}``,
``{"call": "approve"}`` or ``{"call": "request_changes", "items": [...]}`` (SPEC §10).
It is what ``session_ended.ending``, the agent-stop hook's stdin ``ending``, ``--json``'s
``ending`` and the board's store hold; :meth:`Finish.record` and its peers make it,
:func:`ending_from_record` reads it back."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Finish:
    """A Standard session's ending: what it did (SPEC S4: non-empty after trimming)."""

    call: ClassVar[str] = "finish"
    summary: str
    output: object = None
    """The typed payload, validated by the session's :class:`OutputType` (issue 14 item 4);
    ``None`` when the session has none."""

    def arguments(self) -> dict[str, Any]:
        """The ending's arguments as the stream and ``--json`` show them.

        ``{"summary": ...}``, plus ``"output"`` (as JSON) when the ending carries one.
        """
        if self.output is None:
            return {"summary": self.summary}
        return {"summary": self.summary, "output": to_jsonable_python(self.output, fallback=str)}

    def __repr__(self) -> str:
        """``Finish(summary='...')``, with ``output=...`` only when there is one."""
        output = "" if self.output is None else f", output={self.output!r}"
        return f"Finish(summary={self.summary!r}{output})"

    def record(self) -> EndingRecord:
        """The ending as one record, ``{"call": "finish", "summary": ...}`` (SPEC §10)."""
        return {"call": self.call, **self.arguments()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Approve:
    """A reviewer's approval. Takes nothing (SPEC S4)."""

    call: ClassVar[str] = "approve"

    def arguments(self) -> dict[str, Any]:
        """The ending's arguments (none)."""
        return {}

    def record(self) -> EndingRecord:
        """The ending as one record, ``{"call": "approve"}`` (SPEC §10)."""
        return {"call": self.call}


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestChanges:
    """A reviewer's request for changes: at least one trimmed, non-blank item (SPEC S4)."""

    call: ClassVar[str] = "request_changes"
    items: tuple[str, ...]

    def arguments(self) -> dict[str, Any]:
        """The ending's arguments as the stream and ``--json`` show them."""
        return {"items": list(self.items)}

    def record(self) -> EndingRecord:
        """The ending as one record, ``{"call": "request_changes", "items": [...]}`` (SPEC §10)."""
        return {"call": self.call, **self.arguments()}


Ending: TypeAlias = Finish | Approve | RequestChanges
"""A typed ending. Verdicts are read straight off it (SPEC S11)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """A refused ending call. The session continues; ``message`` goes to the model.

    Attributes:
        call: the canonical name of the refused call.
        reason: ``"unavailable"`` (outside the group, SPEC S3) or ``"shape"`` (SPEC S4).
        message: what the model is told, naming what to send instead.
    """

    call: str
    reason: Literal["unavailable", "shape"]
    message: str


class OutputType:
    """The type a ``finish`` must carry as ``output`` (issue 14 item 4; SPEC S4).

    Any type pydantic validates and describes by JSON Schema: a ``BaseModel`` subclass
    (the usual case), a dataclass, a ``TypedDict``, ``list[int]``...

    Args:
        kind: the type.

    Raises:
        TypeError: pydantic cannot validate ``kind`` or make its JSON Schema.
    """

    def __init__(self, kind: object) -> None:
        try:
            self.adapter: TypeAdapter[object] = TypeAdapter(cast(Any, kind))
            schema = self.adapter.json_schema()
        except Exception as e:  # PydanticSchemaGenerationError, PydanticUserError...
            raise TypeError(f"output_type {kind!r} has no JSON Schema: {e}") from None
        self.kind = kind
        self.defs: dict[str, Any] = schema.pop("$defs", {})
        """Definitions the schema refers to (``#/$defs/...``), hoisted to the tool's root."""
        self.schema: dict[str, Any] = schema
        """The output's JSON Schema, without its ``$defs``."""

    def finish_spec(self) -> dict[str, Any]:
        """The ``finish`` tool with an ``output`` of this type beside the summary (SPEC S2)."""
        base = _TOOL_SPECS["finish"]
        params: dict[str, Any] = {
            "type": "object",
            "properties": {
                **base["parameters"]["properties"],
                "output": {"description": "The result, fitting this schema.", **self.schema},
            },
            "required": ["summary", "output"],
            "additionalProperties": False,
        }
        if self.defs:
            params["$defs"] = self.defs
        description = f"{base['description']} Give the result as `output`, fitting its schema."
        return {"name": "finish", "description": description, "parameters": params}

    def validate(self, value: object) -> object:
        """The validated output; a JSON string is read as JSON first (small models send one).

        Raises:
            ValueError: the value does not fit; the message lists the problems by field.
        """
        if isinstance(value, str):
            try:
                return self.adapter.validate_json(value)
            except ValidationError:
                pass  # a str output type: validated as the string itself below
        try:
            return self.adapter.validate_python(value)
        except ValidationError as e:
            problems = [
                f"{'.'.join(str(p) for p in err['loc']) or '(the output)'}: {err['msg']}"
                for err in e.errors(include_url=False)[:10]
            ]
            more = f" (and {e.error_count() - 10} more)" if e.error_count() > 10 else ""
            raise ValueError("; ".join(problems) + more) from None


def canonical_call(name: str) -> str:
    """Map a spelling (``requestChanges``) to the canonical one (``request_changes``)."""
    return _ALIASES.get(name, name)


def is_ending_name(name: str) -> bool:
    """True if ``name`` spells one of the three ending calls in any language."""
    return canonical_call(name) in ENDING_CALLS


def ending_group(role: Role | None) -> tuple[str, ...]:
    """The ending calls ``role`` has (SPEC S2); ``None`` (an on-use script) has none."""
    return () if role is None else _GROUPS[role]


def spell(call: str, language: Language = "python") -> str:
    """Spell a canonical call name the way ``language`` does."""
    if language == "javascript" and call == "request_changes":
        return "requestChanges"
    return call


def _signature(call: str, language: Language) -> str:
    args = {"finish": "summary", "approve": "", "request_changes": "items"}[call]
    return f"{spell(call, language)}({args})"


def _unavailable(call: str, role: Role | None, language: Language) -> Refusal:
    name = spell(call, language)
    if role is None:
        msg = (
            f"{name} is not available: on-use scripts cannot end a session. An on-use "
            "script has no ending calls; only the agent itself ends its session."
        )
    elif role is Role.STANDARD:
        msg = (
            f"{name} is not available: you are doing the work, not reviewing it, so you "
            f"are not the one to give verdicts. Your ending is {_signature('finish', language)}"
            ": call it with a summary of what you did once the work is done."
        )
    else:
        msg = (
            f"{name} is not available to a reviewer. Your endings are "
            f"{_signature('approve', language)} if the work is acceptable, or "
            f"{_signature('request_changes', language)} with the list of changes needed."
        )
    return Refusal(call=call, reason="unavailable", message=msg)


def _shape(call: str, problem: str, language: Language) -> Refusal:
    fixes = {
        "finish": 'send finish(summary="<what you did and how you checked it>")',
        "approve": (
            "send approve() with no arguments if the work is acceptable as it is, or "
            f'{spell("request_changes", language)}(["<a change>", ...]) if it needs changes'
        ),
        "request_changes": (
            f'send {spell("request_changes", language)}(["<a change the implementer must '
            f'make>", ...]) with at least one non-blank item, or approve() if none is needed'
        ),
    }
    msg = f"{spell(call, language)} was refused: {problem}. Instead, {fixes[call]}."
    return Refusal(call=call, reason="shape", message=msg)


_ARGUMENTS: dict[str, frozenset[str]] = {
    "finish": frozenset({"summary"}),
    "approve": frozenset(),
    "request_changes": frozenset({"items"}),
}
_SCHEMA_WORDS = frozenset({"type", "properties", "required", "additionalProperties", "title"})


def _unwrapped(call: str, args: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments inside an echoed schema wrapper.

    ``{"type": "object", "properties": {"summary": "did X"}}`` -> ``{"summary": "did X"}``
    when no argument is given beside it.
    """
    props = args.get("properties")
    if not isinstance(props, Mapping) or set(args) & _ARGUMENTS[call]:
        return args
    if set(args) - _SCHEMA_WORDS or not set(props) & _ARGUMENTS[call]:
        return args
    return props


def _lenient(call: str, args: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """Drop harmless extra keys and unwrap an echoed schema (SPEC S4).

    Harmless extra keys are a small model's echoed schema words (``"type"``,
    ``"description"``) or a note beside its arguments. The shape check that follows is
    unchanged.

    Returns:
        The arguments to check and, for an extra key that would change the verdict
        (``approve`` given the ``items`` of a request for changes), the problem to refuse
        it with (else ``None``).
    """
    args = _unwrapped(call, args)
    if call == "approve":
        items = args.get("items")
        if isinstance(items, list | tuple) and any(str(i).strip() for i in items):
            return args, "approve takes no changes, yet items were given"
    return {k: v for k, v in args.items() if k in _ARGUMENTS[call]}, None


def _check_shape(
    call: str, args: Mapping[str, Any], language: Language, *, lenient: bool = False
) -> Ending | Refusal:
    if lenient:
        args, problem = _lenient(call, args)
        if problem is not None:
            return _shape(call, problem, language)
    extra = sorted(set(args) - _ARGUMENTS[call])
    if extra:
        return _shape(call, f"unexpected argument(s) {', '.join(map(repr, extra))}", language)
    if call == "approve":
        return Approve()
    if call == "finish":
        summary = args.get("summary")
        if not isinstance(summary, str):
            return _shape(call, "the summary is missing or not a string", language)
        if not summary.strip():
            return _shape(call, "the summary is empty", language)
        return Finish(summary=summary.strip())
    items = args.get("items")
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        return _shape(call, "items must be a list of strings", language)
    kept = tuple(s for s in (i.strip() for i in items) if s)
    if not kept:
        return _shape(call, "it has no non-blank items", language)
    return RequestChanges(items=kept)


def check_ending(
    call: str,
    arguments: Mapping[str, Any] | None,
    *,
    role: Role | None,
    language: Language = "python",
    output: OutputType | None = None,
) -> Ending | Refusal:
    """Check one ending call: role first, then shape (SPEC S3, S4).

    Args:
        call: the call's name in any spelling (``request_changes`` or ``requestChanges``).
        arguments: the call's arguments by name; ``None`` is treated as ``{}``.
            Positional arguments must be mapped to names by the caller's SDK.
        role: the caller's role, or ``None`` for an on-use script (SPEC S13).
        language: how refusal messages spell the calls.
        output: the type ``finish`` must carry as ``output`` (issue 14 item 4), or
            ``None``: a missing or invalid output is a ``shape`` refusal.

    Returns:
        The typed ending (with trimmed summary / items, the validated output) or a
        :class:`Refusal`.

    Raises:
        ValueError: if ``call`` is not an ending call at all (see :func:`is_ending_name`).
    """
    name = canonical_call(call)
    if name not in ENDING_CALLS:
        raise ValueError(f"{call!r} is not an ending call")
    if name not in ending_group(role):
        return _unavailable(name, role, language)
    if name == "finish" and output is not None:
        return _typed_finish(_unwrapped(name, arguments or {}), output, language)
    return _check_shape(name, arguments or {}, language, lenient=True)


def _typed_finish(
    args: Mapping[str, Any], output: OutputType, language: Language
) -> Ending | Refusal:
    """``finish`` with an ``output`` of type ``output``: the summary's shape, then the output's.

    A program's ``finish("...", {...})`` sends its second argument as ``argument_2`` (the
    SDK names positional arguments past the summary so): that is the output.
    """
    if "output" not in args and "argument_2" in args:
        args = {
            **{k: v for k, v in args.items() if k != "argument_2"},
            "output": args["argument_2"],
        }
    rest = {k: v for k, v in args.items() if k != "output"}
    result = _check_shape("finish", rest, language, lenient=True)
    if not isinstance(result, Finish):
        return result
    if "output" not in args:
        problem = "the output is missing"
    else:
        try:
            return Finish(summary=result.summary, output=output.validate(args["output"]))
        except ValueError as e:
            problem = f"the output does not fit its schema ({e})"
    fix = (
        f'send {spell("finish", language)}(summary="<what you did>", output=<the result>) '
        f"with an output that fits this JSON Schema: {_schema_text(output)}"
    )
    return Refusal(
        call="finish", reason="shape", message=f"finish was refused: {problem}. Instead, {fix}."
    )


def _schema_text(output: OutputType, limit: int = 2000) -> str:
    """The output's JSON Schema as compact JSON, cut to ``limit`` characters."""
    schema = {**output.schema, **({"$defs": output.defs} if output.defs else {})}
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "…"


def ending_from_record(record: Mapping[str, Any], *, output: OutputType | None = None) -> Ending:
    """Read an :data:`EndingRecord` back into its typed ending (the inverse of ``record()``).

    The record is checked like a declaration's arguments (SPEC S4: trimmed summary,
    trimmed non-blank items, no other keys), whatever role made it. A ``finish``
    record's ``output`` is validated by ``output`` when given, else kept as its JSON.

    Args:
        record: ``{"call": <a canonical or JavaScript spelling>, **arguments}``.
        output: the type of a ``finish``'s ``output`` (issue 14 item 4), if known.

    Returns:
        The :data:`Ending`; ``ending_from_record(e.record()) == e`` for every ending ``e``.

    Raises:
        ValueError: ``call`` is missing or not an ending call, or the arguments do not
            fit its shape (the message says why).
    """
    call = record.get("call")
    if not isinstance(call, str) or not is_ending_name(call):
        raise ValueError(f"not an ending record: its call is {call!r}")
    arguments = {k: v for k, v in record.items() if k != "call"}
    payload = arguments.pop("output", None) if canonical_call(call) == "finish" else None
    result = _check_shape(canonical_call(call), arguments, "python")
    if isinstance(result, Refusal):
        raise ValueError(f"not an ending record: {result.message}")
    if isinstance(result, Finish) and payload is not None:
        value = payload if output is None else output.validate(payload)
        return Finish(summary=result.summary, output=value)
    return result


_TOOL_SPECS: dict[str, dict[str, Any]] = {
    "finish": {
        "name": "finish",
        "description": (
            "End the session: report what you did. Only call it when the work is done; "
            "the run's agent-stop hooks check it before the session ends."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": "What you did, non-empty."}
            },
            "required": ["summary"],
            "additionalProperties": False,
        },
    },
    "approve": {
        "name": "approve",
        "description": "End the review: the work is acceptable as it is.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
    "request_changes": {
        "name": "request_changes",
        "description": "End the review: the work needs these changes (at least one).",
        "parameters": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Each change the implementer must make.",
                }
            },
            "required": ["items"],
            "additionalProperties": False,
        },
    },
}


def ending_tool_specs(role: Role, *, output: OutputType | None = None) -> list[dict[str, Any]]:
    """The synthetic ending tools offered to ``role`` in tool-calling mode (SPEC S2, M1).

    Args:
        role: the session's role.
        output: the type ``finish`` carries as ``output`` (issue 14 item 4): its schema is
            then part of ``finish``'s parameters, and ``output`` is required.

    Returns:
        A list of ``{"name", "description", "parameters"}`` dicts (JSON Schema
        parameters), only for the role's own group.
    """
    return [
        output.finish_spec() if c == "finish" and output is not None else _TOOL_SPECS[c]
        for c in ending_group(role)
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnClose:
    """What one turn's declarations come to once the turn is over (SPEC S8, S9).

    Both modes close a turn into one of these and report it the same way
    (:func:`gg.modes.base.close_turn`).
    """

    ending: Ending | None
    """The declaration read: the last one, ``None`` when there was none or it was revoked."""
    superseded: int
    """How many declarations of the turn a later one replaced (SPEC S8)."""
    revoked: Ending | None
    """The declaration withdrawn because the turn failed after it (SPEC S9), if any."""


@dataclass(slots=True)
class Declarations:
    """The declarations of one turn (SPEC S8, S9): last one read, superseded count, revoke.

    Declaring sets a flag; it does not unwind anything. Use one instance per
    turn (per program or per reply).
    """

    current: Ending | None = None
    """The declaration that counts so far (the last one)."""
    count: int = field(default=0)
    """How many endings were declared in this turn."""
    revoked: Ending | None = None
    """The declaration withdrawn by :meth:`revoke`, if any."""

    def declare(self, ending: Ending) -> None:
        """Record ``ending``; it supersedes any earlier declaration of this turn."""
        self.current = ending
        self.count += 1

    @property
    def superseded(self) -> int:
        """How many declarations were replaced by a later one (SPEC S8)."""
        return max(self.count - 1, 0)

    def revoke(self) -> Ending | None:
        """Withdraw the current declaration (SPEC S9); returns what was withdrawn."""
        self.revoked, self.current = self.current, None
        return self.revoked

    def close(self, *, failed: bool) -> TurnClose:
        """Close the turn (SPEC S8, S9).

        The last declaration counts unless the turn ``failed`` after declaring, which
        revokes it.

        Args:
            failed: whether the turn failed (a program raised; a call of the reply failed).

        Returns:
            The :class:`TurnClose`: ending read, superseded count, revoked ending.
        """
        if failed and self.current is not None:
            self.revoke()
        return TurnClose(ending=self.current, superseded=self.superseded, revoked=self.revoked)
