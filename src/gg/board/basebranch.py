"""Which branch a board merges into, decided once and kept with the board (SPEC B1, B4).

``[board] base_branch`` names it when set. When it is not (the default, ``""``), the
base is the branch the repository had checked out when the board was made (its first
``gg board add`` or ``gg board run``), stored in gg's state directory for the
repository beside the board's store (``board-base-branch``, written by gg only,
opened without following a link), so later runs agree even after the checkout
moves. A detached HEAD with nothing configured or stored is a clear error.

With a PostgreSQL store shared by several runners, each runner's state directory
keeps its own record: set ``[board] base_branch`` there so they cannot differ.
"""

from __future__ import annotations

import os
from pathlib import Path

from gg.board.git import Git
from gg.errors import UserError
from gg.refname import branch_problem
from gg.state import open_private, workspace_state

__all__ = ["BASE_FILE", "settle_base", "stored_base"]

BASE_FILE = "board-base-branch"
"""The file in the workspace's state directory holding the base branch's name."""


def stored_base(workspace: Path) -> str | None:
    """The base branch recorded when the board was made, or ``None`` if none was.

    Raises:
        StateError: the state directory or the file is unusable (a link, another user's).
    """
    path = workspace_state(workspace) / BASE_FILE
    try:
        fd = open_private(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        name = os.read(fd, 512).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    return name if branch_problem(name) is None else None


def _store(workspace: Path, name: str) -> str:
    """Record ``name`` as the board's base unless one was recorded meanwhile; the one kept."""
    path = workspace_state(workspace) / BASE_FILE
    try:
        fd = open_private(path, os.O_WRONLY, create=True)
    except FileExistsError:
        return stored_base(workspace) or name
    try:
        os.write(fd, f"{name}\n".encode())
    finally:
        os.close(fd)
    return name


async def settle_base(git: Git, workspace: Path, configured: str) -> str:
    """The board's base branch: ``configured``, else the stored one, else HEAD's (stored).

    Also checks that the workspace is a git repository's top level (every board command
    that makes or runs a board needs one).

    Args:
        git: gg's git on the repository.
        workspace: the repository's top level (its state directory holds the record).
        configured: ``[board] base_branch`` (``""``: not set).

    Returns:
        The branch name (it may not exist yet: :meth:`Git.check_repo` says so at run time).

    Raises:
        UserError: not a git repository's top level; ``configured`` is no branch name gg
            passes to git (:func:`gg.refname.branch_problem`: e.g. it starts with ``-``);
            or nothing configured or stored and HEAD is detached or on such a name.
    """
    branch = await git.current_branch()  # checks the repository first
    if configured:
        return _checked(configured, "[board] base_branch names")
    stored = stored_base(workspace)
    if stored is not None:
        return stored
    if branch is None:
        raise UserError(
            "board.base_branch: the repository's HEAD is detached and no base branch is "
            "configured; check out the branch the board should merge into, or set "
            '[board] base_branch in gg.toml (e.g. base_branch = "main")'
        )
    return _store(workspace, _checked(branch, "the repository's HEAD is on"))


def _checked(name: str, what: str) -> str:
    """``name`` when gg passes it to git as a branch (:func:`gg.refname.branch_problem`).

    Raises:
        UserError: it is not one (e.g. it starts with ``-``); ``what`` says where it came from.
    """
    problem = branch_problem(name)
    if problem is not None:
        raise UserError(
            f"board.base_branch: {what} {name[:200]!r}, which is not a branch name gg "
            f"passes to git (it {problem}); check out the branch the board should merge "
            'into, or set [board] base_branch in gg.toml (e.g. base_branch = "main")'
        )
    return name
