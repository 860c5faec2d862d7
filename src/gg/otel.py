"""OpenTelemetry: the stream as GenAI semantic-convention spans (issue 14 item 3; SPEC O1).

:class:`OtelListener` is a stream listener (:data:`gg.stream.Listener`): it turns the
typed events of a run, as they are written, into spans that follow the OpenTelemetry
GenAI semantic conventions::

    invoke_agent gg                 a session (gen_ai.operation.name = "invoke_agent")
    ├── chat MODEL                  a turn's model call, with its token usage
    ├── execute_tool read_file      a tool call (a program's calls nest in submit_program)
    └── execute_tool spawn
        └── invoke_agent gg.subagent    the subagent the call started (SPEC T2)

The run id is every span's ``gen_ai.conversation.id``. Endings (declared, refused,
superseded, revoked), gate results, error turns, retries and ceilings are span events
named ``gg.<event type>`` (``gg.gate_blocked``, ``gg.ceiling_tripped``...), on the tool
span they happened in or on the session's span. A session stopped by a ceiling ends
with status ERROR and ``error.type`` naming the ceiling.

This module needs the ``otel`` extra (opentelemetry-api and -sdk) and is imported only
when OpenTelemetry is on (:mod:`gg.telemetry` loads it): off by default, and free when off
(no import, no listener). It is on when the standard environment asks for traces:
``OTEL_TRACES_EXPORTER`` names an exporter other than ``none``, or
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set, and
``OTEL_SDK_DISABLED`` is not ``true``; or when ``Agent(otel=True)`` says so. The
provider is then the application's own when it installed an SDK one globally, else
:func:`tracer_provider_from_env`: the SDK reads ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` and ``OTEL_BSP_*`` itself, and
each exporter (``otlp`` needs ``opentelemetry-exporter-otlp``) reads its own
``OTEL_EXPORTER_*`` settings. Tool arguments and results go on spans only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (they are the stream's
redacted excerpts).

What it does not promise: spans for a run whose listener was not attached from its
start, or any order among the spans of concurrent sessions beyond their parents. A
failure inside the listener is logged once and never reaches the run.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from gg.errors import UserError
from gg.stream import (
    CeilingTripped,
    Event,
    SessionEnded,
    SessionStarted,
    ToolCalled,
    ToolResult,
    TurnEvent,
)

__all__ = ["OtelListener", "listener_from_env", "tracer_provider_from_env"]

_log = logging.getLogger("gg.otel")

PROVIDERS: dict[str, str] = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
}
"""gg's model schemes whose ``gen_ai.provider.name`` is a well-known value; any other
scheme (``openai-compat``, ``local``, ``scripted``) is its own name."""

_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def model_parts(spec: str) -> tuple[str, str]:
    """``(gen_ai.provider.name, gen_ai.request.model)`` of a model spec.

    ``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"openai-compat:qwen@http://..."``
    -> ``("openai-compat", "qwen")``; ``"local"`` -> ``("local", "local")``.
    """
    scheme, _, rest = spec.partition(":")
    model = rest.split("@", 1)[0] if rest else scheme
    return PROVIDERS.get(scheme, scheme), model or scheme


@dataclass(slots=True)
class _Session:
    """The open spans of one session: its own, and its tool calls in progress."""

    span: Span
    provider: str
    model: str
    tools: list[tuple[str, Span]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0

    def innermost(self) -> Span:
        """The tool span in progress (a program's call nests in ``submit_program``), or its own."""
        return self.tools[-1][1] if self.tools else self.span


class OtelListener:
    """A stream listener that makes GenAI semantic-convention spans (module docstring).

    Args:
        tracer_provider: where the spans go; default: the global provider
            (:func:`opentelemetry.trace.get_tracer_provider`).
        capture_content: put tool arguments and result excerpts on ``execute_tool``
            spans (``gen_ai.tool.call.arguments`` / ``.result``); default: from
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.

    Example::

        from opentelemetry.sdk.trace import TracerProvider
        from gg.otel import OtelListener

        agent = gg.Agent(model=..., listeners=[OtelListener(tracer_provider=TracerProvider())])
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        capture_content: bool | None = None,
    ) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer("gg")
        self.capture = (
            capture_content
            if capture_content is not None
            else os.environ.get(_CONTENT_ENV, "").strip().lower() == "true"
        )
        self._sessions: dict[tuple[str, str], _Session] = {}
        self._failed = False

    def __call__(self, event: Event) -> None:
        """Map one event to spans; never raises (a failure is logged once)."""
        try:
            self._on(event)
        except Exception:  # the run must never fail for its telemetry
            if not self._failed:
                self._failed = True
                _log.warning("gg.otel: an event could not be traced", exc_info=True)

    def _on(self, event: Event) -> None:
        if isinstance(event, SessionStarted):
            self._start(event)
        elif event.type == "run_ended":
            self._end_run(event.run_id)
        elif (session := self._sessions.get((event.run_id, event.session_id or ""))) is None:
            return
        elif isinstance(event, TurnEvent):
            self._chat(session, event)
        elif isinstance(event, ToolCalled):
            self._tool_start(session, event)
        elif isinstance(event, ToolResult):
            self._tool_end(session, event)
        elif isinstance(event, SessionEnded):
            self._end(session, event)
        elif event.type in _SESSION_EVENTS:
            target = session.innermost() if event.type.startswith("ending_") else session.span
            target.add_event(f"gg.{event.type}", _event_attributes(event, self.capture), _now())
            if isinstance(event, CeilingTripped):
                session.span.set_attribute("gg.ceiling", event.ceiling)

    def _start(self, event: SessionStarted) -> None:
        """``invoke_agent``: a child of the spawning call when the session is a subagent."""
        provider, model = model_parts(event.model)
        parent = self._sessions.get((event.run_id, event.parent or ""))
        context = trace.set_span_in_context(parent.innermost()) if parent else None
        name = "gg" if event.parent is None else "gg.subagent"
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": event.run_id,
            "gg.session.id": event.session_id or "",
            "gg.role": event.role,
            "gg.mode": event.mode,
            "gg.language": event.language,
            "gg.arm": event.arm,
        }
        if event.parent is not None:
            attributes["gg.session.parent"] = event.parent
        span = self.tracer.start_span(
            f"invoke_agent {name}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_now(),
        )
        self._sessions[(event.run_id, event.session_id or "")] = _Session(span, provider, model)

    def _chat(self, session: _Session, event: TurnEvent) -> None:
        """``chat``: the turn's model call, from its start (``seconds`` before) to the reply."""
        end = _now()
        usage = event.usage
        session.input_tokens += usage.input_tokens
        session.output_tokens += usage.output_tokens
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": session.provider,
            "gen_ai.request.model": session.model,
            "gen_ai.conversation.id": event.run_id,
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gg.turn": event.turn or 0,
            "gg.usage.cost": usage.cost,
            "gg.calls": list(event.calls),
        }
        for name, key in _USAGE_DETAILS.items():  # the providers' details, where counted
            count = getattr(usage, name, 0)
            if isinstance(count, int) and count:
                attributes[key] = count
        span = self.tracer.start_span(
            f"chat {session.model}",
            context=trace.set_span_in_context(session.span),
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=end - int(max(event.seconds, 0.0) * 1e9),
        )
        span.end(end_time=end)

    def _tool_start(self, session: _Session, event: ToolCalled) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.name,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": event.run_id,
            "gg.turn": event.turn or 0,
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = _json(event.arguments)
        span = self.tracer.start_span(
            f"execute_tool {event.name}",
            context=trace.set_span_in_context(session.innermost()),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_now(),
        )
        session.tools.append((event.name, span))

    def _tool_end(self, session: _Session, event: ToolResult) -> None:
        """End the innermost open call of that name (and any left open inside it)."""
        names = [name for name, _ in session.tools]
        if event.name not in names:
            return
        at = len(names) - 1 - names[::-1].index(event.name)
        inner, session.tools = session.tools[at:], session.tools[:at]
        for _, span in reversed(inner[1:]):
            span.end(end_time=_now())
        span = inner[0][1]
        if self.capture:
            span.set_attribute("gen_ai.tool.call.result", event.excerpt)
        if not event.ok:
            span.set_attribute("error.type", "tool_error")
            text = event.excerpt[:300] if self.capture else "the tool call failed"
            span.set_status(Status(StatusCode.ERROR, text))
        span.end(end_time=_now())

    def _end(self, session: _Session, event: SessionEnded) -> None:
        """End the session's span: its ending as a ``gg.session_ended`` event, or ERROR."""
        key = (event.run_id, event.session_id or "")
        self._sessions.pop(key, None)
        at = _now()
        for _, span in reversed(session.tools):
            span.end(end_time=at)
        span = session.span
        span.add_event("gg.session_ended", _event_attributes(event, self.capture), at)
        span.set_attribute("gg.turns", event.turns)
        span.set_attribute("gen_ai.usage.input_tokens", session.input_tokens)  # its turns'
        span.set_attribute("gen_ai.usage.output_tokens", session.output_tokens)
        if event.ending is not None:
            span.set_attribute("gg.status", "ended")
            span.set_attribute("gg.ending.call", str(event.ending.get("call", "")))
        else:
            span.set_attribute("gg.status", "stopped")
            span.set_attribute("error.type", event.ceiling or "stopped")
            why = (event.diagnosis or "stopped")[:300] if self.capture else "stopped"
            span.set_status(Status(StatusCode.ERROR, f"{event.ceiling or 'stopped'}: {why}"))
        span.end(end_time=at)

    def _end_run(self, run_id: str) -> None:
        """The run is over: end what is still open of it (an interrupted session)."""
        for key in [k for k in self._sessions if k[0] == run_id]:
            session = self._sessions.pop(key)
            for _, span in reversed(session.tools):
                span.end()
            session.span.set_attribute("error.type", "interrupted")
            session.span.set_status(Status(StatusCode.ERROR, "the run ended first"))
            session.span.end()


_USAGE_DETAILS = {
    "cache_read_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
}
""":class:`gg.models.base.Usage` detail counts -> their GenAI attribute names."""

_SESSION_EVENTS = frozenset(
    {
        "error_turn",
        "ending_declared",
        "ending_refused",
        "ending_superseded",
        "ending_revoked",
        "gate_passed",
        "gate_blocked",
        "ceiling_tripped",
        "retry",
    }
)
"""Event types that become span events (``gg.<type>``)."""

_SKIPPED = frozenset({"type", "run_id", "at", "session_id"})
_CONTENT = frozenset(
    {"arguments", "diagnosis", "ending", "excerpt", "items", "message", "messages", "reason"}
    | {"summary", "task", "text", "stop_reason", "hook", "call_text"}
)
"""Fields that carry what models, tools and hooks wrote: on spans only with content capture."""


def _event_attributes(event: Event, capture: bool) -> dict[str, AttributeValue]:
    """An event's own fields as span-event attributes ``gg.<field>`` (nested ones as JSON).

    Without ``capture``, the fields in :data:`_CONTENT` are left out (content capture is
    off by default, per the GenAI conventions).
    """
    out: dict[str, AttributeValue] = {}
    for name, value in event.model_dump(mode="json").items():
        if name in _SKIPPED or value is None or (not capture and name in _CONTENT):
            continue
        if isinstance(value, bool | int | float | str):
            out[f"gg.{name}"] = value
        else:
            out[f"gg.{name}"] = _json(value)
    return out


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:4000]


def _now() -> int:
    """Now in ns since the epoch: the listener hears each event as it is written."""
    return time.time_ns()


_OTLP_BY_PROTOCOL = {"grpc": "otlp_proto_grpc", "http/protobuf": "otlp_proto_http"}


def _entry_name(name: str, env: Mapping[str, str]) -> str:
    """``otlp`` as the exporter the OTLP protocol setting picks (grpc unless it says http).

    Raises:
        UserError: ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` names no OTLP protocol.
    """
    if name != "otlp":
        return name
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or ""
    ).strip() or "grpc"
    if protocol not in _OTLP_BY_PROTOCOL:
        raise UserError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL is {protocol!r}: use 'grpc' or 'http/protobuf'"
        )
    return _OTLP_BY_PROTOCOL[protocol]


def _exporters(names: str, env: Mapping[str, str]) -> list[SpanExporter]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names, by the SDK's entry points.

    Raises:
        UserError: a name no installed package provides (says which package to add).
    """
    found = {ep.name: ep for ep in entry_points(group="opentelemetry_traces_exporter")}
    out: list[SpanExporter] = []
    for name in (_entry_name(n.strip(), env) for n in names.split(",")):
        if not name or name == "none":
            continue
        if name not in found:
            extra = " (pip install opentelemetry-exporter-otlp)" if name.startswith("otlp") else ""
            raise UserError(
                f"OpenTelemetry traces go to the exporter {name!r} (OTEL_TRACES_EXPORTER, "
                f"default otlp), which no installed package provides{extra}; installed: "
                f"{', '.join(sorted(found)) or 'none'}"
            )
        out.append(found[name].load()())
    return out


def tracer_provider_from_env(environ: Mapping[str, str] | None = None) -> TracerProvider:
    """An SDK tracer provider set up by the standard ``OTEL_*`` environment variables.

    The SDK itself reads the resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``),
    the sampler and the batch settings; the exporters are those ``OTEL_TRACES_EXPORTER``
    names (default ``otlp``: gRPC, or HTTP when ``OTEL_EXPORTER_OTLP_PROTOCOL`` is
    ``http/protobuf``), each reading its own ``OTEL_EXPORTER_*`` settings.

    Args:
        environ: the environment to read ``OTEL_TRACES_EXPORTER`` from (default: the process's).

    Raises:
        UserError: an exporter that is not installed.
    """
    env = os.environ if environ is None else environ
    provider = TracerProvider()
    for exporter in _exporters(env.get("OTEL_TRACES_EXPORTER") or "otlp", env):
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def listener_from_env() -> OtelListener:
    """The listener :class:`gg.Agent` attaches when OpenTelemetry is on (module docstring).

    The application's global SDK provider when it set one, else
    :func:`tracer_provider_from_env`.

    Raises:
        UserError: an exporter that is not installed.
    """
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return OtelListener(tracer_provider=current)
    return OtelListener(tracer_provider=_env_provider())


@functools.cache
def _env_provider() -> TracerProvider:
    """One provider from the environment per process (its exporters flush at exit)."""
    return tracer_provider_from_env()
