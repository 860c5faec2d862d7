"""A session's turns over time as an inline SVG chart, drawn server-side (issue 15 item 2).

One point per turn for each of two series, on one shared x axis (the turn number):
tokens (input + output, the left scale) and the model's seconds (the right scale).
No CDN, no JavaScript library: plain SVG elements built by :func:`gg.web.markup.el`,
each point a ``<circle class="pt tokens|seconds" data-turn="N">`` with a ``<title>``
tooltip. Values from a forged stream (negative, NaN, infinite) are drawn as 0.

Live, :data:`CHART_JS` (part of the run page's script) draws a session's chart again
the same way, from the ``data-tokens`` and ``data-seconds`` attributes of its
``turn`` events (:func:`point_attrs`), each time a new one is appended.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from gg.web.markup import AttrValue, Markup, el

__all__ = ["CHART_JS", "MAX_POINTS", "TurnPoint", "point_attrs", "turns_chart"]

MAX_POINTS = 5000
"""Most turns drawn in one chart (the last ones; the chart says how many it left out)."""

_W, _H = 640, 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 56, 14, 30
_CAPTION = "tokens per turn (left scale, solid) and seconds per turn (right scale, dashed)"


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


def point_attrs(point: TurnPoint) -> dict[str, AttrValue]:
    """The attributes a ``turn`` event's element carries for the live chart (as drawn)."""
    return {
        "data-tokens": int(_finite(point.tokens)),
        "data-seconds": f"{_finite(point.seconds):.3f}",
    }


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
    seconds = [round(_finite(p.seconds), 3) for p in shown]  # as point_attrs has them
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
    caption = _CAPTION
    if left_out:
        caption += f"; the first {left_out} turns are left out"
    return el("figure", {"class": "chart"}, svg, el("figcaption", None, caption))


CHART_JS: str = (
    f"""
  var GG_CHART = {{w: {_W}, h: {_H}, left: {_LEFT}, right: {_RIGHT}, top: {_TOP},
    bottom: {_BOTTOM}, max: {MAX_POINTS}, caption: {json.dumps(_CAPTION)}}};"""
    + """
  var SVG_NS = "http://www.w3.org/2000/svg";
  function svgNode(name, attrs, tip) {
    var node = document.createElementNS(SVG_NS, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (tip !== undefined) {
      var title = document.createElementNS(SVG_NS, "title");
      title.textContent = tip;
      node.appendChild(title);
    }
    return node;
  }
  function chartSeries(svg, pts, key, unit) {
    var c = GG_CHART, innerW = c.w - c.left - c.right, innerH = c.h - c.top - c.bottom;
    var most = Math.max.apply(null, pts.map(function (p) { return p[key]; }));
    var top = most || 1;
    var step = innerW / Math.max(pts.length - 1, 1), line = [];
    pts.forEach(function (p, i) {
      var x = pts.length > 1 ? c.left + i * step : c.left + innerW / 2;
      var y = c.top + innerH * (1 - p[key] / top);
      line.push(x.toFixed(1) + "," + y.toFixed(1));
      var amount = key === "tokens" ? String(Math.floor(p.tokens)) : p.seconds.toFixed(2);
      var tip = "turn " + p.turn + ": " + amount + " " + unit + (p.at ? " (" + p.at + ")" : "");
      svg.appendChild(svgNode("circle", {"class": "pt " + key, "data-turn": p.turn,
        cx: x.toFixed(1), cy: y.toFixed(1), r: 3}, tip));
    });
    svg.insertBefore(svgNode("polyline", {"class": "line " + key, points: line.join(" "),
      fill: "none"}), svg.querySelector("circle"));
    return most;
  }
  function chartLabel(svg, x, y, anchor, text, key) {
    var label = svgNode("text", {"class": "label " + key, x: x, y: y, "text-anchor": anchor});
    label.textContent = text;
    svg.appendChild(label);
  }
  /* Draw a session's chart again from its turn events (the server draws it the same way). */
  window.ggRedrawChart = function (holder, box) {
    var c = GG_CHART, pts = [];
    box.querySelectorAll(".ev.turn[data-tokens]").forEach(function (ev) {
      var when = ev.querySelector("time");
      pts.push({turn: ev.getAttribute("data-turn") || "?",
        tokens: Number(ev.getAttribute("data-tokens")) || 0,
        seconds: Number(ev.getAttribute("data-seconds")) || 0,
        at: when ? when.getAttribute("datetime") : ""});
    });
    if (!pts.length) { return; }
    pts = pts.slice(-c.max);
    var svg = svgNode("svg", {xmlns: SVG_NS, viewBox: "0 0 " + c.w + " " + c.h,
      width: c.w, height: c.h, role: "img"});
    var bottom = c.h - c.bottom, right = c.w - c.right;
    svg.appendChild(svgNode("path", {"class": "axis", fill: "none",
      d: "M" + c.left + "," + c.top + " V" + bottom + " H" + right + " V" + c.top}));
    var tokens = chartSeries(svg, pts, "tokens", "tokens");
    var seconds = chartSeries(svg, pts, "seconds", "s");
    chartLabel(svg, c.left - 4, c.top + 10, "end", Math.floor(tokens) + " tok", "tokens");
    chartLabel(svg, right + 4, c.top + 10, "start", seconds.toFixed(2) + " s", "seconds");
    chartLabel(svg, c.left, bottom + 18, "start", "turn " + pts[0].turn, "turn");
    chartLabel(svg, right, bottom + 18, "end", "turn " + pts[pts.length - 1].turn, "turn");
    var figure = document.createElement("figure");
    figure.className = "chart";
    figure.appendChild(svg);
    var caption = document.createElement("figcaption");
    caption.textContent = c.caption;
    figure.appendChild(caption);
    var old = holder.querySelector(".chart");
    if (old) { old.replaceWith(figure); } else { holder.appendChild(figure); }
    var heading = holder.querySelector("h3");
    if (heading) { heading.textContent = heading.textContent.replace(/\\d+ turns?$/,
      pts.length + (pts.length === 1 ? " turn" : " turns")); }
  };
"""
)
"""The live chart's script (plain JavaScript, no library): ``ggRedrawChart(holder, box)``."""
