"""What a reply cost (SPEC S6 ``max_cost``): ``[model.prices]`` first, then a maintained table.

The price of one reply comes from, in order:

1. ``[model.prices."MODEL"]`` (``input_per_mtok``, ``output_per_mtok``, and optionally
   ``cache_read_per_mtok`` and ``cache_write_per_mtok``, which default to the input
   rate): the override, for a model the table lacks or a negotiated price;
2. the ``genai-prices`` package's bundled table (the ``providers`` extra), for the
   providers it knows (``openai``, ``anthropic``, ``openai-responses``); it prices cache
   reads and writes at their own rates and reasoning tokens as output. The bundled
   snapshot is used as installed: gg never fetches a newer one (no network);
3. else 0, and ``max_cost`` cannot trip (the agent refuses that set-up up front,
   :func:`has_price`).

Prices are per million tokens in the table's currency unit (the package's is US
dollars; an override may use any unit, but then should name every model used).

What it does not promise: the provider's invoice. Tiers by context length are the
package's; batch, priority and regional rates are not applied.
"""

from __future__ import annotations

import functools
import importlib
import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from gg.models.base import Usage
from gg.models.retry import Prices

__all__ = ["TABLE_PROVIDERS", "Prices", "has_price", "price_of", "table_price"]

TABLE_PROVIDERS: Mapping[str, str] = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
}
"""gg's provider names whose models the price table knows, to the table's provider ids.
``openai-compat`` is not among them: its server could be serving anything."""

_Lookup: TypeAlias = Callable[[Usage, str, str], float | None]


def _override(usage: Usage, price: Mapping[str, float]) -> float:
    """The cost of ``usage`` at an override's per-million rates."""

    def rate(key: str, default: float) -> float:
        value = price.get(key)
        return default if value is None else float(value)

    per_in = rate("input_per_mtok", 0.0)
    per_read, per_write = rate("cache_read_per_mtok", per_in), rate("cache_write_per_mtok", per_in)
    per_out = rate("output_per_mtok", 0.0)
    read, write = usage.cache_read_tokens, usage.cache_write_tokens
    plain = max(usage.input_tokens - read - write, 0)
    total = plain * per_in + read * per_read + write * per_write + usage.output_tokens * per_out
    return total / 1_000_000


@functools.cache
def _table() -> _Lookup | None:
    """The price table's lookup, or ``None`` when ``genai-prices`` is not installed."""
    try:
        module = importlib.import_module("genai_prices")
    except ImportError:
        return None

    def lookup(usage: Usage, model: str, provider_id: str) -> float | None:
        counts: dict[str, Any] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        }
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = module.calc_price(
                    module.Usage(**counts), model_ref=model, provider_id=provider_id
                )
            cost = float(result.total_price)
        except Exception:  # an unknown model (LookupError) or the table's own fault
            return None
        return cost if math.isfinite(cost) and cost >= 0 else None

    return lookup


def table_price(usage: Usage, *, model: str, provider: str) -> float | None:
    """The cost of ``usage`` from the maintained table, or ``None`` when it has no price.

    Args:
        usage: the reply's counts (cache and reasoning counts are parts of the totals).
        model: the provider's model name, e.g. ``"gpt-4o-mini"``.
        provider: gg's provider name (``"openai"``, ``"anthropic"``...).

    Returns:
        The cost in US dollars, or ``None``: a provider the table does not cover, a
        model it does not know, or ``genai-prices`` not installed.
    """
    provider_id = TABLE_PROVIDERS.get(provider)
    lookup = _table()
    if provider_id is None or lookup is None:
        return None
    return lookup(usage, model, provider_id)


def price_of(usage: Usage, *, model: str, provider: str, prices: Prices | None) -> float:
    """The cost of one reply (SPEC S6): the override, else the table, else 0.

    Args:
        usage: the reply's counts.
        model: the provider's model name, the override table's key.
        provider: gg's provider name, for the maintained table.
        prices: ``[model.prices]`` as a mapping (see :data:`Prices`), or ``None``.

    Returns:
        The cost (>= 0) in the override's unit, else the table's (US dollars), else 0.0.
    """
    price = (prices or {}).get(model)
    if price:
        return _override(usage, price)
    found = table_price(usage, model=model, provider=provider)
    return 0.0 if found is None else found


def has_price(provider: str, model: str, prices: Prices | None) -> bool:
    """Whether replies of ``model`` can cost anything, so a ``max_cost`` budget can trip.

    Args:
        provider: gg's provider name (a spec's scheme).
        model: the provider's model name.
        prices: ``[model.prices]``.

    Returns:
        True when ``prices`` has the model or the maintained table prices it above 0.
    """
    if (prices or {}).get(model):
        return True
    probe = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    return bool(table_price(probe, model=model, provider=provider))
