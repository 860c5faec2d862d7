"""Which branch names gg passes to git: git's own rules, and never one that reads as an option.

``[board] base_branch`` and the branch a board records as its base reach host
git as revisions (``git diff BASE...BRANCH``, ``git worktree add ... BASE``,
``git fetch URL refs/heads/BASE``). A name starting with ``-`` would be read as
an option there (``--output=/tmp/x``, ``--upload-pack=...``), so it is refused
with every name ``git check-ref-format --branch`` refuses, before any git runs
(issue 9 item 4; SPEC B1).
"""

from __future__ import annotations

__all__ = ["branch_problem"]

_FORBIDDEN = frozenset(" ~^:?*[\\")
_MAX = 200


def branch_problem(name: str) -> str | None:
    """Why ``name`` is not a branch name gg uses, or ``None`` when it is one.

    The rules of ``git check-ref-format --branch`` (for ``refs/heads/NAME``), plus a
    length cap: no leading ``-``, not ``HEAD`` or ``@``; no control character, space,
    ``~ ^ : ? * [`` or a backslash; no ``..`` or ``@{``; no empty component (``//``, a leading
    or trailing ``/``), none starting with ``.`` or ending with ``.lock``; no
    trailing ``.``; at most 200 characters.

    Args:
        name: a short branch name (``main``, ``release/2.0``).

    Returns:
        A short reason (``"starts with '-'"``), or ``None``.
    """
    if not name:
        return "is empty"
    if len(name) > _MAX:
        return f"is longer than {_MAX} characters"
    if name.startswith("-"):
        return "starts with '-' (git would read it as an option)"
    if name in ("HEAD", "@"):
        return f"is {name!r}"
    bad = sorted({c for c in name if ord(c) < 32 or ord(c) == 127 or c in _FORBIDDEN})
    if bad:
        return f"holds {''.join(bad)!r}"
    for seq in ("..", "@{", "//"):
        if seq in name:
            return f"holds {seq!r}"
    if name.startswith("/") or name.endswith(("/", ".")):
        return "starts with '/' or ends with '/' or '.'"
    for part in name.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return f"has a component {part!r} (starting with '.' or ending with '.lock')"
    return None
