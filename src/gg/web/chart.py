"""A session's turns over time as an inline SVG chart, drawn server-side (issue 15 item 2).

One point per turn for each of two series, on one shared x axis (the turn number):
tokens (input + output, the left scale) and the model's seconds (the right scale).
No CDN, no JavaScript library: plain SVG elements built by :func:`gg.web.markup.el`,
each point a ``<circle class="pt tokens|seconds" data-turn="N">`` with a ``<title>``
tooltip. Values from a forged stream (negative, NaN, infinite) are drawn as 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gg.web.markup import AttrValue, Markup, el

__all__ = ["MAX_POINTS", "TurnPoint", "turns_chart"]

MAX_POINTS = 5000
"""Most turns drawn in one chart (the last ones; the chart says how many it left out)."""

_W, _H = 640, 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 56, 14, 30


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPoint:
    """One turn of a session as the chart draws it."""

    turn: int
    """The turn's number in its session (from 1)."""
    tokens: int
    """Input plus output tokens of the reply (SPEC O1 usage)."""
    seconds: float
    """The model's latency for the reply, in seconds."""
    at: str = ""
    """When the turn was recorded (ISO 8601 UTC), for the tooltip."""


def _finite(value: float) -> float:
    """``value``, or 0 when it is negative, NaN or infinite."""
    return value if math.isfinite(value) and value > 0 else 0.0


def _series(
    points: Sequence[TurnPoint], values: Sequence[float], kind: str, unit: str
) -> list[Markup]:
    """A series' polyline and one circle per point (x by position, y by value)."""
    top = max(values) or 1.0
    inner_w = _W - _LEFT - _RIGHT
    inner_h = _H - _TOP - _BOTTOM
    step = inner_w / max(len(points) - 1, 1)
    xy = [
        (_LEFT + (i * step if len(points) > 1 else inner_w / 2), _TOP + inner_h * (1 - v / top))
        for i, v in enumerate(values)
    ]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    out = [el("polyline", {"class": f"line {kind}", "points": line, "fill": "none"})]
    for p, v, (x, y) in zip(points, values, xy, strict=True):
        amount = f"{int(v)}" if kind == "tokens" else f"{v:.2f}"
        tip = f"turn {p.turn}: {amount} {unit}" + (f" ({p.at})" if p.at else "")
        attrs: dict[str, AttrValue] = {
            "class": f"pt {kind}",
            "data-turn": p.turn,
            "cx": f"{x:.1f}",
            "cy": f"{y:.1f}",
        }
        out.append(el("circle", {**attrs, "r": 3}, el("title", None, tip)))
    return out


def _axes(points: Sequence[TurnPoint], tokens: float, seconds: float) -> list[Markup]:
    """The frame, the scales' top values, and the first and last turn numbers."""
    bottom, right = _H - _BOTTOM, _W - _RIGHT
    frame = f"M{_LEFT},{_TOP} V{bottom} H{right} V{_TOP}"
    out = [el("path", {"class": "axis", "d": frame, "fill": "none"})]
    labels = [
        (_LEFT - 4, _TOP + 10, "end", f"{int(tokens)} tok", "tokens"),
        (right + 4, _TOP + 10, "start", f"{seconds:.2f} s", "seconds"),
        (_LEFT, bottom + 18, "start", f"turn {points[0].turn}", "turn"),
        (right, bottom + 18, "end", f"turn {points[-1].turn}", "turn"),
    ]
    for x, y, anchor, text, kind in labels:
        out.append(
            el("text", {"class": f"label {kind}", "x": x, "y": y, "text-anchor": anchor}, text)
        )
    return out


def turns_chart(points: Sequence[TurnPoint], *, title: str) -> Markup:
    """The chart of a session's turns: tokens and seconds per turn.

    The ``viewbox`` attribute is written in lower case: the HTML parser gives SVG
    attributes their camel case (``viewBox``) itself.

    Args:
        points: the session's turns in order (a stream's ``turn`` events).
        title: the chart's accessible title (escaped), e.g. ``"session s1: turns"``.

    Returns:
        ``<figure class="chart">`` holding an ``<svg>`` with one ``circle.pt.tokens``
        and one ``circle.pt.seconds`` per turn drawn (the last :data:`MAX_POINTS`),
        or a ``<p>`` saying there are no turns yet.
    """
    if not points:
        return el("p", {"class": "chart empty"}, "no turns yet")
    left_out = max(0, len(points) - MAX_POINTS)
    shown = points[left_out:]
    tokens = [float(_finite(p.tokens)) for p in shown]
    seconds = [_finite(p.seconds) for p in shown]
    svg = el(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewbox": f"0 0 {_W} {_H}",
            "width": _W,
            "height": _H,
            "role": "img",
        },
        el("title", None, title),
        *_axes(shown, max(tokens), max(seconds)),
        *_series(shown, tokens, "tokens", "tokens"),
        *_series(shown, seconds, "seconds", "s"),
    )
    caption = "tokens per turn (left scale, solid) and seconds per turn (right scale, dashed)"
    if left_out:
        caption += f"; the first {left_out} turns are left out"
    return el("figure", {"class": "chart"}, svg, el("figcaption", None, caption))
