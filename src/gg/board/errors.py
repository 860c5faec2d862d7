"""Board errors (SPEC B1-B5): one family under gg's root.

The tree::

    GGError                    gg's root (gg.errors)
    └── BoardError             a board operation failed; carries .code, .operation, .retryable
        ├── WorktreeChanged    a worktree's ``.git`` is not the file gg wrote (code "worktree")
        └── IssueMoved         the issue is not this step's any more (code "store")

A :class:`BoardError` with ``retryable=True`` leaves the issue in its state,
so the next ``gg board run`` tries again (the base branch moved, a git lock
was held). One with ``retryable=False`` makes the issue ``stuck`` with the
message as its diagnosis. Misuse (not a git repository, no base branch, an
unknown issue number) is a :class:`gg.UserError` instead. Constructing an
error never logs.
"""

from __future__ import annotations

from gg import GGError

__all__ = ["BoardError", "IssueMoved", "WorktreeChanged"]


class BoardError(GGError):
    """A board operation failed.

    Attributes:
        code: a short stable identifier, e.g. ``"git"``, ``"merge"``, ``"store"``.
        operation: what was being done, e.g. ``"git merge --no-ff gg/issue-3"``.
        retryable: whether running the board again may help.
    """

    def __init__(self, message: str, *, code: str, operation: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.operation = operation
        self.retryable = retryable


class WorktreeChanged(BoardError):
    """A worktree's ``.git`` was changed by what runs in it: gg will not run git there.

    Never retryable: the issue whose agent made the change is ``stuck`` with
    this message, which names the change (issue 9 item 4).
    """

    def __init__(self, message: str, *, operation: str) -> None:
        super().__init__(message, code="worktree", operation=operation, retryable=False)


class IssueMoved(BoardError):
    """The issue is not this step's to change any more (issue 17).

    Its stored state is not the one the step expected, or the runner no longer holds
    its claim: another runner took it over (this one's lease ran out while it worked).
    The step stops without writing anything: neither ``stuck`` nor ``paused``, since
    the issue is someone else's now.
    """

    def __init__(self, message: str, *, operation: str) -> None:
        super().__init__(message, code="store", operation=operation, retryable=True)
