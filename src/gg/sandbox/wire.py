"""Bounded JSON for the membrane: the names of :mod:`gg.bounded`, where they live now.

The helpers moved to :mod:`gg.bounded` (issue 9) so that the model adapters,
which must not import the sandbox, share the same bounds; this module keeps
the sandbox's spelling ``wire.loads``, ``wire.scrub``...
"""

from __future__ import annotations

from gg.bounded import (
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    BadJSON,
    depth,
    dumps,
    loads,
    lone_surrogate,
    may_hold_surrogates,
    scrub,
)

__all__ = [
    "MAX_DEPTH", "MAX_NUMBER_CHARS", "BadJSON", "depth", "dumps", "loads", "lone_surrogate",
    "may_hold_surrogates", "scrub",
]
