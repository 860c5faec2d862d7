"""What an ``edit_file`` call means: the one place of a text its ``old`` names (issue 16).

``edit_file(path, old, new)`` replaces one piece of a file. A strong model copies
``old`` from the file exactly; a small one drops a line (a docstring, a comment)
or an indentation level. :func:`apply_edit` tries, in order:

1. **Exact**: ``old`` occurs once in the text: it is replaced (more than once:
   refused, so nothing ambiguous is ever changed).
2. **Loose**: the lines of ``old``, compared without their surrounding white
   space, occur in order in exactly one run of the file's lines, with at most
   :data:`MAX_GAP` lines between two of them. The run is replaced by ``new``
   with the lines the model left out kept where they were (beside the line of
   ``old`` that ``new`` keeps unchanged) and ``new`` shifted to the run's
   indentation. When a left-out line cannot be placed that way, or the run is
   not unique, nothing is changed.
3. Otherwise nothing is changed and the error shows the file whole when it is
   small (:data:`SHOW_WHOLE`), else its lines most like ``old``, to copy.

The result says which it was and shows the lines as they now are, so the model
sees what it changed. Pure text work: the caller reads and writes the file
(:func:`gg.tools.builtins.edit_file`).
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import re
from dataclasses import dataclass

from gg.errors import ToolError

__all__ = ["MAX_GAP", "SHOW_WHOLE", "Edit", "apply_edit"]

MAX_GAP = 5
"""Lines of the file that may lie between two lines of ``old`` in a loose match."""

SHOW_WHOLE = 3_000
"""Characters: a file this small is shown whole when ``old`` matches nowhere (a model that
edits without reading first sees what is there); a larger one shows its closest lines."""

_SEARCH_LINES = 5_000  # a loose match or a hint is only looked for in files this long
_SEARCH_CHARS = 500_000  # ... and this large
_PIECE_LINES = 200  # ... for an old or new of at most this many lines
_HINT_LINE = 400  # characters of a line compared for the closest-lines hint
_OCCURRENCES = 1_000  # occurrences of old / new looked at for "made before"


@dataclass(frozen=True, slots=True)
class Edit:
    """An edit that applies.

    Attributes:
        text: the file's whole new text.
        exact: ``old`` occurred in the file as sent (else a loose match, module docstring).
        first: the 1-based number of the first line that changed.
        lines: the lines now in the replaced place (``new``, with kept lines).
        kept: how many lines the model left out of ``old`` and were kept.
    """

    text: str
    exact: bool
    first: int
    lines: tuple[str, ...]
    kept: int


def apply_edit(text: str, old: str, new: str, *, name: str) -> Edit:
    """Apply ``old`` -> ``new`` to ``text`` (see the module docstring for the rules).

    Args:
        text: the file's text.
        old: the piece to replace, as the model sent it.
        new: what goes in its place.
        name: the file's name, for messages.

    Returns:
        The :class:`Edit`.

    Raises:
        ToolError: ``old`` is empty, occurs more than once, or matches nowhere (or more
            than one place) even loosely; the message says what to send instead.
    """
    if not old.strip():
        raise ToolError("old is empty: give the exact lines to replace, copied from the file")
    done = _already(text, old, new)
    if done is not None:
        raise ToolError(
            f"nothing changed: {name} already has new's lines (from line {done}): this edit "
            "was made before. If the task is done, end the session now; else make a "
            "different change."
        )
    count = text.count(old)
    if count == 1:
        at = text.index(old)
        first = text.count("\n", 0, at) + 1
        return Edit(text.replace(old, new, 1), True, first, tuple(new.splitlines()), 0)
    if count > 1:
        raise ToolError(
            f"old occurs {count} times in {name}; add the lines around it so it occurs once"
        )
    if not _searchable(text, old, new):
        raise ToolError(f"old was not found in {name}; copy the exact lines to replace into old")
    lines = text.splitlines()
    loose = _loose(lines, old, new, name)
    if loose is not None:
        start, end, merged, kept = loose
        body = lines[:start] + merged + lines[end + 1 :]
        tail = "\n" if text.endswith("\n") else ""
        return Edit("\n".join(body) + tail, False, start + 1, tuple(merged), kept)
    if len(text) <= SHOW_WHOLE:
        raise ToolError(
            f"old was not found in {name}. {name} is now:\n{text.rstrip()}\n"
            "Send old again as lines copied exactly from it (with their indentation)."
        )
    near = _closest(lines, old)
    if near:
        raise ToolError(
            f"old was not found in {name}; its closest lines there are:\n{near}\n"
            "Send old again as exactly those lines (every line, with its indentation)."
        )
    raise ToolError(f"old was not found in {name}; read it and copy the exact lines into old")


def _already(text: str, old: str, new: str) -> int | None:
    """The line where ``new`` already stands, when the edit was made before; else ``None``.

    Made before: ``new`` stands in the text as whole lines and every occurrence of
    ``old`` lies inside one of those (applying it again would only repeat it); or
    ``old`` does not occur, ``new`` has two lines or more, and they occur in order in
    one place that holds every loose match of ``old`` (the module docstring's rule).
    A one-line ``new`` found only loosely proves nothing (such a line is common).
    """
    core = new.strip("\n")
    if not core.strip():
        return None
    spans = list(itertools.islice(re.finditer(rf"(?m)^{re.escape(core)}$", text), _OCCURRENCES))
    if spans:
        olds = list(itertools.islice(re.finditer(re.escape(old), text), _OCCURRENCES))
        bounds = [m.span() for m in spans]
        if len(olds) < _OCCURRENCES and all(_inside(o.start(), len(old), bounds) for o in olds):
            return text.count("\n", 0, bounds[0][0]) + 1
        return None
    if old in text or not _searchable(text, old, new) or len(core.splitlines()) < 2:
        return None
    lines = text.splitlines()
    placed = _runs(lines, new)
    if len(placed) != 1:
        return None
    inside = set(placed[0])
    return placed[0][0] + 1 if all(set(r) <= inside for r in _runs(lines, old)) else None


def _inside(at: int, size: int, spans: list[tuple[int, int]]) -> bool:
    """Whether ``[at, at + size)`` lies inside one of the sorted, disjoint ``spans``."""
    k = bisect.bisect_right(spans, (at, float("inf"))) - 1
    return k >= 0 and spans[k][0] <= at and at + size <= spans[k][1]


def _searchable(text: str, old: str, new: str) -> bool:
    """Whether the loose rules may look at this edit: bounded files and pieces, LF lines."""
    return (
        "\r" not in text
        and len(text) <= _SEARCH_CHARS
        and text.count("\n") <= _SEARCH_LINES
        and old.count("\n") <= _PIECE_LINES
        and new.count("\n") <= _PIECE_LINES
    )


def _runs(lines: list[str], piece: str) -> list[list[int]]:
    """Every loose run of ``piece``'s lines in ``lines`` (see :func:`_run_from`)."""
    want = [w.strip() for w in piece.strip("\n").splitlines()]
    if not want:
        return []
    flat = [line.strip() for line in lines]
    return [r for r in (_run_from(flat, want, s) for s in range(len(flat))) if r]


def _loose(
    lines: list[str], old: str, new: str, name: str
) -> tuple[int, int, list[str], int] | None:
    """The one loose match: ``(first index, last index, merged new lines, kept)``.

    ``None`` when nothing matches loosely. Raises :class:`ToolError` when more than one
    run matches or a left-out line has no place.
    """
    sent = old.strip("\n").splitlines()
    want = [w.strip() for w in sent]
    runs = _runs(lines, old)
    if not runs:
        return None
    if len(runs) > 1:
        starts = ", ".join(str(r[0] + 1) for r in runs[:5])
        raise ToolError(
            f"old does not occur in {name} as sent, and its lines match {len(runs)} places "
            f"(lines {starts}); copy the exact lines of the one you mean into old"
        )
    at = runs[0]
    shift = _indent(lines[at[0]]) - _indent(sent[0])
    fresh = [_shifted(line, shift) for line in new.strip("\n").splitlines()]
    merged = _merge(lines, at, want, fresh)
    if merged is None:
        raise ToolError(
            f"old was not found in {name}; its closest lines there are:\n"
            + "\n".join(lines[at[0] : at[-1] + 1])
            + "\nSend old again as exactly those lines (every line, with its indentation)."
        )
    kept = (at[-1] - at[0] + 1) - len(at)
    return at[0], at[-1], merged, kept


def _run_from(flat: list[str], want: list[str], start: int) -> list[int] | None:
    """Indexes of ``want``'s lines in ``flat`` (lines stripped) from ``start``; or ``None``."""
    if flat[start] != want[0]:
        return None
    found = [start]
    for w in want[1:]:
        last = found[-1]
        stop = min(last + MAX_GAP + 2, len(flat))
        nxt = next((j for j in range(last + 1, stop) if flat[j] == w), None)
        if nxt is None:
            return None
        found.append(nxt)
    return found


def _merge(lines: list[str], at: list[int], want: list[str], fresh: list[str]) -> list[str] | None:
    """``fresh`` with the file's left-out lines put back beside an unchanged neighbour."""
    matcher = difflib.SequenceMatcher(None, want, [f.strip() for f in fresh], autojunk=False)
    same: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            same[block.a + k] = block.b + k
    after: dict[int, list[str]] = {}  # index in fresh -> lines to put after it (-1: first)
    for k in range(len(at) - 1):
        gap = lines[at[k] + 1 : at[k + 1]]
        if not gap:
            continue
        if k in same:
            after.setdefault(same[k], []).extend(gap)
        elif k + 1 in same:
            after.setdefault(same[k + 1] - 1, []).extend(gap)
        else:
            return None
    merged = list(after.get(-1, []))
    for i, line in enumerate(fresh):
        merged.append(line)
        merged.extend(after.get(i, []))
    return merged


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _shifted(line: str, shift: int) -> str:
    """``line`` moved right by ``shift`` spaces (left when negative, never past its text)."""
    if not line.strip() or shift == 0:
        return line
    if shift > 0:
        return " " * shift + line
    return line[min(-shift, _indent(line)) :]


def _ratio(a: str, b: str) -> float:
    """The difflib ratio of two lines, each cut to :data:`_HINT_LINE` characters."""
    matcher = difflib.SequenceMatcher(None, a[:_HINT_LINE], b.strip()[:_HINT_LINE], autojunk=False)
    if matcher.real_quick_ratio() <= 0.5 or matcher.quick_ratio() <= 0.5:
        return 0.0
    return matcher.ratio()


def _closest(lines: list[str], old: str) -> str:
    """The run of ``lines`` most like ``old``, or ``""`` when none is like it.

    A run starts at the line most like ``old``'s first line and ends at the line most
    like its last, at most :data:`MAX_GAP` lines past ``old``'s length further on; its
    score is the mean of those two difflib ratios, which must exceed 0.5.
    """
    want = [w.strip() for w in old.strip("\n").splitlines()]
    best: tuple[float, int, int] = (0.5, -1, -1)
    for i, line in enumerate(lines):
        head = _ratio(want[0], line)
        if head <= best[0]:
            continue  # the mean cannot beat the best with a head this low
        j, tail = i, head
        if len(want) > 1:
            ahead = range(i + 1, min(i + len(want) + MAX_GAP, len(lines)))
            scored = [(_ratio(want[-1], lines[k]), k) for k in ahead]
            if not scored:
                continue
            tail, j = max(scored)
        if (head + tail) / 2 > best[0]:
            best = ((head + tail) / 2, i, j)
    return "\n".join(lines[best[1] : best[2] + 1]) if best[1] >= 0 else ""
