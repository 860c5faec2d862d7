"""A secret is redacted before any text is cut or folded: no part of it survives a cut.

Each way the pages shorten a text (the fold of a long output at its head, the hard cap
of every text, the board's cut titles, one-line labels, a program's one long line and
its cap) is tried with a secret of the environment placed across the cut.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import pytest

from gg.board.store import Issue, IssueDetail, IssueState
from gg.web.boardview import BoardSnapshot, board_html
from gg.web.escape import h
from gg.web.highlight import PROGRAM_CAP, program_html
from gg.web.markup import HARD_CAP, esc, fold, short

SECRET = "Wombat-Quill-Saffron-Tundra-Ochre-Lantern-4711"

_CUTS: dict[str, tuple[Callable[[str], str], int]] = {
    "fold head": (lambda t: fold(t), 2000),
    "fold cap": (lambda t: fold(t, cap=5000), 5000),
    "hard cap": (lambda t: esc(t), HARD_CAP),
    "h limit": (lambda t: h(t, 200), 200 - 40),
    "short": (lambda t: short(t, 300), 300),
    "program line": (lambda t: program_html(t, "python"), 4000),
    "program cap": (lambda t: program_html("x = 1\n" + t, "python"), PROGRAM_CAP - 6),
}


def _parts(secret: str) -> list[str]:
    """Every piece of ``secret`` of 8 characters or more."""
    return [secret[i : i + 8] for i in range(len(secret) - 7)]


@pytest.mark.parametrize("where", sorted(_CUTS))
@pytest.mark.parametrize("into", [1, 9, 23, len(SECRET) - 1])
def test_no_part_of_a_secret_survives_a_cut(
    monkeypatch: pytest.MonkeyPatch, where: str, into: int
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    render, at = _CUTS[where]
    start = max(at - into, 0)
    text = "a" * start + SECRET + "b" * (at + 3000)
    shown = html.unescape(re.sub(r"<[^>]*>", "", str(render(text))))  # the text a reader sees
    leaked = [p for p in _parts(SECRET) if p in shown]
    assert not leaked, (where, start, leaked[:3])


def test_a_secret_in_a_merge_sha_cut_for_the_board_leaves_no_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    issue = Issue(
        number=1,
        title="t",
        body="",
        state=IssueState.DONE,
        round=1,
        branch=None,
        summary=None,
        diagnosis=None,
        merge_sha=SECRET,
        created_at="2026-12-01T00:00:00Z",
        updated_at="2026-12-01T00:00:00Z",
    )
    shown = board_html(
        BoardSnapshot(
            (IssueDetail(issue=issue, sessions=(), verdicts=(), history=()),), exists=True
        )
    )
    assert 'class="result merged"' in shown
    assert not [p for p in _parts(SECRET) if p in shown], shown
