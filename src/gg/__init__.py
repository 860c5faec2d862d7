"""gg: an agent driver whose sessions end only by an explicit, typed ending call."""

from __future__ import annotations

__all__: list[str] = []
