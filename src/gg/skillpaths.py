"""Where skills live, and reading a file of a skill outside the workspace (SPEC T3).

The workspace's skill directories are ``.gg/skills``, ``skills`` and ``.claude/skills``
(agent-written: read beneath the workspace). The user's are ``$GG_SKILLS_DIR`` (else
``$XDG_CONFIG_HOME/gg/skills``, else ``~/.config/gg/skills``), then ``~/.claude/skills``
(Claude Code's). A file of a user's skill is readable by ``read_file`` under its absolute
path (:func:`user_skill_file`): read-only, beneath the skill's own folder (the one holding
its ``SKILL.md``), with :mod:`gg.tools.safefs`'s rules (no link followed, no ``..``,
regular files only). Nothing else outside the workspace is reachable that way.

This module imports nothing of gg's but :mod:`gg.tools.safefs`, so the built-in tools can
use it without an import cycle.
"""

from __future__ import annotations

import os
from pathlib import Path

from gg.errors import ToolError
from gg.tools.safefs import check_path, open_beneath

__all__ = ["SKILL_FILE", "WORKSPACE_SKILL_DIRS", "user_skill_dirs", "user_skill_file"]

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILL_DIRS = (".gg/skills", "skills", ".claude/skills")
"""The workspace's skill directories, relative to it, first first."""


def user_skill_dirs() -> list[Path]:
    """The user's skill directories, first first (module docstring); none need exist."""
    explicit = os.environ.get("GG_SKILLS_DIR")
    if explicit:
        first = Path(explicit).expanduser()
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or ""
        config = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"
        first = config / "gg" / "skills"
    return [first, Path.home() / ".claude" / "skills"]


def user_skill_file(path: str) -> tuple[Path, str] | None:
    """Split an absolute ``path`` into a user skill folder and the path beneath it.

    ``None`` when ``path`` does not lie in a skill folder of a user's skill directory.

    Args:
        path: an absolute path as a tool got it (``/home/me/.claude/skills/pdf/x.md``).

    Returns:
        ``(folder, relative)``: ``folder`` holds a ``SKILL.md``; ``relative`` is checked
        by :func:`gg.tools.safefs.check_path` (no ``..``), to be read beneath ``folder``.

    Raises:
        ToolError: ``path`` is in a skill folder but its rest is not a plain relative path.
    """
    if not path.startswith("/") or "\x00" in path:
        return None
    target = os.path.normpath(path)
    for root in user_skill_dirs():
        base = os.path.normpath(str(root))
        if not target.startswith(base + "/"):
            continue
        name, _, rest = target[len(base) + 1 :].partition("/")
        if not name or not rest:
            return None
        folder = Path(base) / name
        try:
            os.close(open_beneath(folder, SKILL_FILE))
        except ToolError:
            return None  # not a skill folder
        check_path(rest)
        return folder, rest
    return None
