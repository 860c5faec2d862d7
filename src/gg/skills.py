"""Skills: reusable instructions with an optional on-use script (SPEC T3, S13).

A skill is a folder holding ``SKILL.md`` and, optionally, one on-use script,
``on_use.py`` or ``on_use.js``::

    ---
    name: release-notes
    description: Write release notes from the git log since the last tag.
    ---
    Instructions for the agent (the body, Markdown).

The front matter sits between two ``---`` lines: ``key: value`` lines (values
may be quoted; an indented line continues the previous value; ``#`` lines
are comments; other keys are kept in :attr:`Skill.meta`). ``name`` (letters,
digits, ``-``, ``_``, ``.``; at most 64) and ``description`` are required. A
file that breaks these rules is a :class:`gg.errors.UserError` naming it.

Skill folders are read from, in order: ``<workspace>/.gg/skills/``,
``<workspace>/skills/`` and the user's directory (``$GG_SKILLS_DIR``, else
``~/.config/gg/skills``). A name found in an earlier directory hides the same
name in a later one; two skills of one name in the same directory are an
error. A sub-folder without ``SKILL.md`` is not a skill and is skipped.

The capability ``skills`` offers one tool, ``use_skill(name)``: it returns the
skill's instructions followed by what its on-use script printed and
returned. The script runs through :func:`gg.onuse.run_on_use`, the one place
on-use scripts run from: in the run's sandbox with the SDK and **no ending
group** (S13).

:func:`skills_section` is the system-prompt part listing the skills by name
and description, for sessions whose arm offers ``use_skill``
(:func:`gg.prompts.session_prompt` puts it in every session's prompt).
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from gg.endings import Language
from gg.errors import ToolError, UserError
from gg.onuse import NO_SCRIPT_CAPABILITIES, run_on_use
from gg.tools.arms import Toolset
from gg.tools.registry import Tool, ToolContext, tool
from gg.tools.safefs import open_beneath, read_beneath

__all__ = [
    "NO_SCRIPT_CAPABILITIES",
    "SCRIPTS",
    "SKILL_FILE",
    "SKILL_TOOLS",
    "Skill",
    "discover_skills",
    "load_skill",
    "parse_skill_md",
    "run_on_use",
    "skill_dirs",
    "skills_section",
    "use_skill",
]

SKILL_FILE = "SKILL.md"
SCRIPTS: dict[str, Language] = {"on_use.py": "python", "on_use.js": "javascript"}
"""On-use script file names and their languages."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_BLOCK_MARKS = frozenset({">", "|", ">-", "|-", ">+", "|+"})
_SECTION_MAX = 100  # skills listed in the system prompt
_DESCRIPTION_MAX = 300  # characters of a description in the system prompt
_FILE_CAP = 1_000_000  # bytes of a SKILL.md or an on-use script
_MAX_FOLDERS = 10_000  # entries of a skills directory looked at


@dataclass(frozen=True, kw_only=True)
class Skill:
    """One skill folder, read and checked."""

    name: str
    """How ``use_skill`` names it (from the front matter)."""
    description: str
    """When to use it; listed in the system prompt."""
    instructions: str
    """The body of ``SKILL.md``, trimmed (may be empty)."""
    folder: Path
    """The skill's folder."""
    script: Path | None = None
    """Its on-use script, if any."""
    language: Language | None = None
    """The script's language: ``"python"`` (``on_use.py``) or ``"javascript"`` (``on_use.js``)."""
    meta: dict[str, str] = field(default_factory=dict)
    """Other front-matter keys, as written."""
    base: Path | None = None
    """The workspace, when the skill lives in it: its files are then read beneath it."""


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_skill_md(text: str, *, path: Path) -> tuple[dict[str, str], str]:
    """Split a ``SKILL.md`` into its front matter and its body.

    Args:
        text: the file's content.
        path: the file, for error messages.

    Returns:
        ``(fields, body)``: the front matter's keys and values (strings), and
        the body after the closing ``---``, trimmed.

    Raises:
        UserError: naming ``path`` and the line: no opening or closing ``---``,
            a line that is not ``key: value``, or a key given twice.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise UserError(
            f"{str(path)!r}: a SKILL.md must start with a '---' line that opens "
            "its front matter (name: ..., description: ...)"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise UserError(
            f"{str(path)!r}: the front matter opened on line 1 is never closed by a '---' line"
        )
    fields: dict[str, str] = {}
    key: str | None = None
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t" and key is not None:
            fields[key] = f"{fields[key]} {line.strip()}".strip()
            continue
        name, sep, value = line.partition(":")
        name = name.strip()
        if not sep or not name:
            raise UserError(
                f"{str(path)!r}, line {number}: expected 'key: value' in the front "
                f"matter, got {line.strip()!r}"
            )
        if name in fields:
            raise UserError(f"{str(path)!r}, line {number}: {name!r} is given twice")
        value = value.strip()
        fields[name] = "" if value in _BLOCK_MARKS else _unquote(value)
        key = name
    return fields, "\n".join(lines[end + 1 :]).strip()


def _is_file(path: Path, base: Path | None) -> bool:
    """Whether ``path`` is a regular file; opened beneath ``base`` (the workspace) when given."""
    if base is None:
        return path.is_file()
    try:
        os.close(open_beneath(base, path.relative_to(base).as_posix()))
    except ToolError:
        return False
    return True


def read_skill_file(path: Path, base: Path | None, *, encoding: str = "utf-8") -> str:
    """Read a skill's file: beneath ``base`` (the workspace: agent-written, issue 9 item 1),
    regular files only, at most 1 MB; as a plain path when ``base`` is ``None`` (the user's).

    Raises:
        OSError: unreadable (a ``ToolError`` from the safe open becomes one).
        UnicodeDecodeError: not text in ``encoding``.
    """
    if base is None:
        return path.read_text(encoding=encoding)
    try:
        data = read_beneath(base, path.relative_to(base).as_posix(), cap=_FILE_CAP)
    except ToolError as e:
        raise OSError(str(e)) from None
    return data.decode(encoding)


def _script_of(folder: Path, base: Path | None) -> tuple[Path | None, Language | None]:
    found = [(folder / n, lang) for n, lang in SCRIPTS.items() if _is_file(folder / n, base)]
    if len(found) > 1:
        raise UserError(
            f"{str(folder)!r}: a skill has at most one on-use script; found "
            f"{' and '.join(p.name for p, _ in found)}"
        )
    return found[0] if found else (None, None)


def load_skill(folder: Path, base: Path | None = None) -> Skill:
    """Read and check one skill folder (SPEC T3); beneath ``base`` (the workspace) if given.

    Raises:
        UserError: naming the file: ``SKILL.md`` missing, unreadable, not
            UTF-8, malformed (see :func:`parse_skill_md`), without a valid
            ``name`` or a ``description``; two on-use scripts.
    """
    path = folder / SKILL_FILE
    try:
        text = read_skill_file(path, base, encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{str(path)!r} is not UTF-8 text") from None
    except OSError as e:
        raise UserError(f"cannot read {str(path)!r}: {e.strerror or e}") from None
    fields, body = parse_skill_md(text, path=path)
    name = fields.pop("name", "").strip()
    description = fields.pop("description", "").strip()
    if not name:
        raise UserError(f"{str(path)!r}: the front matter has no 'name'")
    if not _NAME.fullmatch(name):
        raise UserError(
            f"{str(path)!r}: name {name!r} must be 1-64 letters, digits, '-', '_' "
            "or '.', starting with a letter or digit"
        )
    if not description:
        raise UserError(
            f"{str(path)!r}: the front matter has no 'description' (say when to use the skill)"
        )
    script, language = _script_of(folder, base)
    return Skill(
        name=name,
        description=description,
        instructions=body,
        folder=folder,
        script=script,
        language=language,
        meta=fields,
        base=base,
    )


def skill_dirs(workspace: Path) -> list[Path]:
    """Where skills are looked for, first first: the workspace's, then the user's."""
    user = os.environ.get("GG_SKILLS_DIR") or str(Path.home() / ".config" / "gg" / "skills")
    return [workspace / ".gg" / "skills", workspace / "skills", Path(user).expanduser()]


def _skill_folders(root: Path, base: Path | None) -> list[Path]:
    """The folders of ``root`` holding a SKILL.md, sorted; listed beneath ``base`` if given."""
    if base is None:
        if not root.is_dir():
            return []
        return sorted(p for p in root.iterdir() if (p / SKILL_FILE).is_file())
    root = base / root.relative_to(base)
    try:
        fd = open_beneath(base, root.relative_to(base).as_posix(), kind="directory")
    except ToolError:
        return []
    try:
        with os.scandir(fd) as entries:
            names = [e.name for e in itertools.islice(entries, _MAX_FOLDERS)]
    finally:
        os.close(fd)
    return [root / n for n in sorted(names) if _is_file(root / n / SKILL_FILE, base)]


def discover_skills(workspace: Path) -> dict[str, Skill]:
    """Every skill visible from ``workspace``, by name (see the module docstring for order).

    Raises:
        UserError: a malformed skill (naming its file), or two skills of one
            name in the same directory.
    """
    found: dict[str, Skill] = {}
    workspace = workspace.resolve()  # the folders below are taken beneath it
    for i, root in enumerate(skill_dirs(workspace)):
        base = workspace if i < 2 else None  # the first two are in the workspace
        here: dict[str, Skill] = {}
        for folder in _skill_folders(root, base):
            skill = load_skill(folder, base)
            if skill.name in here:
                raise UserError(
                    f"two skills are named {skill.name!r} in {str(root)!r}: "
                    f"{here[skill.name].folder.name!r} and {folder.name!r}"
                )
            here[skill.name] = skill
        for name, skill in here.items():
            found.setdefault(name, skill)
    return found


def skills_section(toolset: Toolset, workspace: Path) -> str:
    """The system prompt's list of skills, or ``""`` when the arm does not offer ``use_skill``.

    Args:
        toolset: the run's resolved toolset arm.
        workspace: the session's workspace, where skills are looked for.

    Returns:
        ``"## Skills\\n..."`` with one ``- name: description`` line per skill, or ``""``.

    Raises:
        UserError: a malformed skill (see :func:`discover_skills`).
    """
    if not toolset.offers("use_skill"):
        return ""
    skills = sorted(discover_skills(workspace).values(), key=lambda s: s.name)
    if not skills:
        return ""
    lines = [f"- {s.name}: {_one_line(s.description)}" for s in skills[:_SECTION_MAX]]
    if len(skills) > _SECTION_MAX:
        lines.append(f"- ... and {len(skills) - _SECTION_MAX} more")
    return (
        "## Skills\nA skill holds instructions for one kind of job. When a job matches "
        "one, call use_skill with its name first and follow what it returns.\n" + "\n".join(lines)
    )


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _DESCRIPTION_MAX else flat[: _DESCRIPTION_MAX - 1] + "…"


@tool(access="command")  # runs on-use scripts: read-only for a reviewer
async def use_skill(name: str, *, ctx: ToolContext) -> str:
    """Use a skill: returns its instructions, and the output of its on-use script if it has one.

    Args:
        name: The skill's name, as listed under Skills in the system prompt.
    """
    try:
        skills = discover_skills(ctx.workspace)
    except UserError as e:
        raise ToolError(f"the skills cannot be read: {e}") from e
    skill = skills.get(name.strip())
    if skill is None:
        known = ", ".join(sorted(skills)) or "(none are installed)"
        raise ToolError(f"there is no skill named {name!r}; the skills are: {known}")
    parts = [f"# Skill: {skill.name}\n{skill.instructions or '(this skill has no instructions)'}"]
    if skill.script is not None and skill.language is not None:
        try:
            source = read_skill_file(skill.script, skill.base)
        except (OSError, UnicodeDecodeError) as e:
            raise ToolError(f"cannot read {str(skill.script)!r}: {e}") from e
        parts.append(
            await run_on_use(
                ctx, source, language=skill.language, label="the skill's on-use script"
            )
        )
    return "\n\n".join(parts)


SKILL_TOOLS: tuple[Tool, ...] = (use_skill,)
"""The tools of capability ``skills``."""
