"""Model providers behind one protocol (SPEC M4, M5).

Owns how gg talks to a model and nothing about roles or sessions:

- :mod:`~gg.models.base`: the ``Model`` protocol, messages, ``Reply``, ``ToolCall``, the one
  ``Usage`` type, retry notices.
- Providers: :mod:`~gg.models.local` (llama.cpp in-process, grammar-constrained calls,
  :mod:`~gg.models.chat_template`, :mod:`~gg.models.catalogue` and
  :mod:`~gg.models.model_file` for the packaged GGUF files),
  :mod:`~gg.models.grammar` (the call grammar), :mod:`~gg.models.openai_compat`,
  :mod:`~gg.models.openai_responses`, :mod:`~gg.models.anthropic`,
  :mod:`~gg.models.scripted`; :mod:`~gg.models.recording` wraps any of them.
- :mod:`~gg.models.factory`: model specs (``local:NAME``, ``openai-compat:M@URL``...) to
  models, the one place that imports an optional extra inside a function.
- The model boundary: :mod:`~gg.models.boundary` (replies cleaned before gg acts on them),
  :mod:`~gg.models.wire` (every field of a server's answer checked),
  :mod:`~gg.models.retry` (transient faults, backoff),
  :mod:`~gg.models.pricing` (what a reply cost: ``[model.prices]``, then genai-prices' table),
  :mod:`~gg.models.parsing` (tool calls written in plain text).
"""
