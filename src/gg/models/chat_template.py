r"""The local model's prompt, built from the GGUF's own chat template (SPEC M5).

A GGUF file carries its chat template (``tokenizer.chat_template``, Jinja).
:class:`ChatPrompt` renders gg's conversation through it with
llama-cpp-python's ``Jinja2ChatFormatter``, the way the model was trained to
read it. When the template takes ``tools`` and writes a call as
``{"name": ..., "arguments": ...}`` between markers (Qwen2.5's
``<tool_call>\n...\n</tool_call>``), the tools go to the template and earlier
calls are written back natively; the markers the template puts before a call
(:attr:`ChatPrompt.call_prefix`) open the model's turn when the grammar
(:mod:`gg.models.grammar`) constrains the call, so the model writes the call
where it was trained to. A template without tools (or a file without a
template: Gemma 3 270M base, for which gg carries :data:`GEMMA_TEMPLATE`)
gets gg's own call format in the prompt (:func:`gg.models.grammar.render_prompt`).

Trust: every string that comes from the conversation (message text, call
names and arguments) is put in the template as a placeholder and tokenised
apart, without special tokens, so text that spells ``<|im_start|>`` cannot
open a turn. Only the template's own text is tokenised with special tokens.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, assert_never

from gg.errors import ModelUnavailable
from gg.models.base import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from gg.models.grammar import _clip, render_prompt

__all__ = ["GEMMA_TEMPLATE", "ChatPrompt", "Segment"]

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>"
    "{{ 'model' if m.role == 'assistant' else 'user' }}\n{{ m.content }}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
"""gg's template of Gemma's turns, for a Gemma file that carries none (the 270M base)."""

_HOLE = re.compile("\ue000(\\d+)\ue001")
_PROBE_TOOL = ToolSpec(name="gg_probe", description="probe", parameters={"type": "object"})

Segment = tuple[str, bool]
"""A piece of a rendered prompt: ``(text, is_template_markup)``."""


@dataclass(slots=True)
class _Holes:
    """Placeholders for conversation strings, and what each stands for."""

    texts: list[str]

    def put(self, text: str) -> str:
        self.texts.append(text)
        return f"\ue000{len(self.texts) - 1}\ue001"

    def json_strings(self, value: Any) -> Any:
        """``value`` with every string (keys too) a placeholder for its JSON-escaped body."""
        if isinstance(value, str):
            return self.put(json.dumps(value, ensure_ascii=False)[1:-1])
        if isinstance(value, dict):
            return {self.json_strings(str(k)): self.json_strings(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json_strings(v) for v in value]
        return value


class ChatPrompt:
    r"""gg's conversation rendered by one chat template (SPEC M5).

    Attributes:
        native: the template takes tools and writes calls as gg's call JSON.
        call_prefix: the template's text before a call in the model's turn
            (``"<tool_call>\n"`` for Qwen2.5), ``""`` when not native.
        stop: strings that end a plain (unconstrained) reply.
    """

    def __init__(self, template: str, *, bos_token: str, eos_token: str) -> None:
        """Compile ``template`` and probe how it writes tools and calls.

        Args:
            template: the Jinja chat template text.
            bos_token: the text of the model's BOS token (templates may print it).
            eos_token: the text of its EOS token.

        Raises:
            gg.errors.ModelUnavailable: the template does not compile or
                fails on a plain conversation, or llama-cpp-python is missing.
        """
        try:
            formatter_class = import_module("llama_cpp.llama_chat_format").Jinja2ChatFormatter
        except ImportError as exc:
            raise ModelUnavailable(
                "llama-cpp-python is not installed, so a chat template cannot be rendered",
                provider="local",
            ) from exc
        try:
            self._format = formatter_class(template, eos_token=eos_token, bos_token=bos_token)
        except Exception as exc:  # jinja2's TemplateSyntaxError and kin
            raise _bad_template(exc) from exc
        self.stop = [t for t in (eos_token, "<end_of_turn>", "<start_of_turn>") if t]
        self.stop = self.stop if template == GEMMA_TEMPLATE else [t for t in [eos_token] if t]
        self.native, self.call_prefix = self._probe()

    def _render(self, items: list[dict[str, Any]], tools: Sequence[ToolSpec], gen: bool) -> str:
        """The template's text for chat ``items`` (and ``tools``, if any)."""
        offered = [{"type": "function", "function": t.as_dict()} for t in tools] or None
        self._format.add_generation_prompt = gen
        try:
            return str(self._format(messages=items, tools=offered).prompt)
        except Exception as exc:  # the template's raise_exception, or a render error
            raise _bad_template(exc) from exc

    def _probe(self) -> tuple[bool, str]:
        """Whether the template is native for tools, and the text it puts before a call."""
        holes = _Holes([])
        ask: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
        if self._render(ask, [_PROBE_TOOL], False) == self._render(ask, [], False):
            return False, ""
        name = holes.put("gg_probe")
        call = {"id": "c0", "type": "function", "function": {"name": name, "arguments": {}}}
        reply: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [call]}
        answered = [*ask, reply]
        try:
            opened = self._render(ask, [_PROBE_TOOL], True)
            written = self._render(answered, [_PROBE_TOOL], False)
        except ModelUnavailable:
            return False, ""
        if not written.startswith(opened):
            return False, ""
        tail = written[len(opened) :]
        head = '{"name": "' + name + '", "arguments": {}}'
        at = tail.find(head)
        return (True, tail[:at]) if at >= 0 else (False, "")

    def segments(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, open_call: bool = False
    ) -> list[Segment]:
        """The prompt for ``messages`` with an open model turn, as markup and text pieces.

        Args:
            messages: the conversation, oldest first.
            tools: the tools offered this turn.
            open_call: end with :attr:`call_prefix`, so what the model writes
                next is the call's JSON (for the constrained reply).

        Returns:
            ``[(text, is_markup), ...]`` in order: markup is the template's own
            text (tokenise with special tokens), the rest is conversation text
            (tokenise without).

        Raises:
            gg.errors.ModelUnavailable: the template fails on this conversation.
        """
        holes = _Holes([])
        if self.native:
            items = [_native_item(m, holes) for m in messages]
            text = self._render(items, tools, True)
        else:
            turns = render_prompt(messages, tools)
            items = [
                {"role": "assistant" if r == "model" else r, "content": holes.put(t)}
                for r, t in turns
            ]
            text = self._render(items, [], True)
        out: list[Segment] = []
        for index, piece in enumerate(_HOLE.split(text)):
            if index % 2:
                out.append((holes.texts[int(piece)], False))
            elif piece:
                out.append((piece, True))
        if open_call and self.call_prefix:
            out.append((self.call_prefix, True))
        return out


def _native_item(message: Message, holes: _Holes) -> dict[str, Any]:
    """One gg message as a chat-template message with placeholders for its strings."""
    match message:
        case SystemMessage():
            return {"role": "system", "content": holes.put(message.content.strip())}
        case UserMessage():
            return {"role": "user", "content": holes.put(_clip(message.content.strip()))}
        case AssistantMessage(content=content, tool_calls=calls):
            item: dict[str, Any] = {"role": "assistant", "content": holes.put(content.strip())}
            if calls:
                item["content"] = holes.put(content.strip()) if content.strip() else ""
                item["tool_calls"] = [_native_call(c, holes) for c in calls]
            return item
        case ToolMessage(name=name, content=content, call_id=call_id):
            return {
                "role": "tool",
                "name": holes.put(name),
                "tool_call_id": call_id,
                "content": holes.put(_clip(content.strip()) or "(empty)"),
            }
        case _:
            assert_never(message)


def _native_call(call: ToolCall, holes: _Holes) -> dict[str, Any]:
    """An earlier call for the template: its name and decoded arguments as placeholders."""
    arguments = call.arguments if isinstance(call.arguments, dict) else {"unparsed": call.arguments}
    name = holes.put(json.dumps(call.name, ensure_ascii=False)[1:-1])
    function = {"name": name, "arguments": holes.json_strings(arguments)}
    return {"id": call.id, "type": "function", "function": function}


def _bad_template(exc: Exception) -> ModelUnavailable:
    return ModelUnavailable(
        f"the model's chat template cannot be used ({type(exc).__name__}: {str(exc)[:200]}); "
        "use another GGUF file",
        provider="local",
    )
