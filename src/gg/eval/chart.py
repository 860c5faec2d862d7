"""The PNG chart of a suite run: success rate and mean turns per configuration (SPEC M6).

matplotlib is the ``eval`` extra (``pip install 'gg-agent[eval]'``); it is imported only when
a chart is asked for, with the non-interactive Agg backend.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from gg.errors import UserError
from gg.eval.report import Summary

__all__ = ["write_chart"]


def write_chart(summaries: Sequence[Summary], path: Path, *, title: str = "gg eval") -> None:
    """Draw two bar charts side by side (success %, mean turns) and save them as PNG.

    Args:
        summaries: one bar per configuration, in order.
        path: the PNG file to write.
        title: the figure's title.

    Raises:
        UserError: matplotlib is not installed (the message names the extra).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise UserError(
            "--chart needs matplotlib: install the 'eval' extra (pip install 'gg-agent[eval]')"
        ) from None
    labels = ["\n".join(textwrap.wrap(s.configuration, 22)) for s in summaries]
    width = max(6.0, 1.6 * len(summaries) * 2)
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(width, 4.5))
    try:
        bars = left.bar(labels, [100 * s.success_rate for s in summaries], color="#3a7d44")
        left.bar_label(bars, fmt="%.0f%%")
        left.set_ylim(0, 105)
        left.set_ylabel("success rate (%)")
        left.set_title("success")
        bars = right.bar(labels, [s.mean_turns for s in summaries], color="#4062bb")
        right.bar_label(bars, fmt="%.1f")
        right.set_ylabel("turns per run")
        right.set_title("mean turns")
        for axis in (left, right):
            axis.tick_params(axis="x", labelsize=8)
        figure.suptitle(title)
        figure.tight_layout()
        figure.savefig(path, format="png", dpi=100)
    finally:
        pyplot.close(figure)
