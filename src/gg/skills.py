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

import yaml

from gg.endings import Language
from gg.errors import ToolError, UserError
from gg.onuse import NO_SCRIPT_CAPABILITIES, run_on_use
from gg.skillpaths import SKILL_FILE, WORKSPACE_SKILL_DIRS, user_skill_dirs
from gg.tools.arms import Toolset
from gg.tools.registry import Tool, ToolContext, tool
from gg.tools.safefs import open_beneath, read_beneath

__all__ = [
    "NO_SCRIPT_CAPABILITIES",
    "SCRIPTS",
    "SKILL_FILE",
    "SKILL_TOOLS",
    "Skill",
    "check_skill_fields",
    "discover_skills",
    "load_skill",
    "parse_skill_md",
    "run_on_use",
    "skill_dirs",
    "skills_section",
    "use_skill",
]

SCRIPTS: dict[str, Language] = {"on_use.py": "python", "on_use.js": "javascript"}
"""On-use script file names and their languages."""
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
_DESCRIPTION_RULE = 1024  # characters of a description at most (Agent Skills)
_SECTION_MAX = 100  # skills listed in the system prompt
_DESCRIPTION_MAX = 300  # characters of a description in the system prompt
_FILE_CAP = 1_000_000  # bytes of a SKILL.md or an on-use script
_MAX_FOLDERS = 10_000  # entries of a skills directory looked at
_FILES_LISTED = 50  # files of a skill's folder named by use_skill


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
    meta: dict[str, object] = field(default_factory=dict)
    """Other front-matter keys, as YAML reads them (``license``, ``metadata`` as a dict,
    ``allowed-tools``...)."""
    base: Path | None = None
    """The workspace, when the skill lives in it: its files are then read beneath it."""


class _Loader(yaml.SafeLoader):
    """YAML's safe loader with duplicate keys refused (a key given twice is an error)."""


def _mapping(loader: _Loader, node: yaml.MappingNode) -> dict[object, object]:
    seen: set[object] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"{key!r} is given twice (line {mark.line + 1})", mark
            )
        seen.add(key)
    return dict(loader.construct_pairs(node, deep=True))


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _front_matter(text: str, *, path: Path, first_line: int) -> dict[str, object]:
    """The YAML mapping of a front matter, with aliases (``*x``) refused (no blow-up)."""
    try:
        if any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, Loader=_Loader)):
            raise UserError(f"{str(path)!r}: the front matter uses a YAML alias ('*'); write "
                            "the value out")  # fmt: skip
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        where = f", line {mark.line + first_line}" if mark is not None else ""
        what = getattr(e, "problem", None) or str(e)
        raise UserError(
            f"{str(path)!r}{where}: the front matter is not valid YAML: {what}"
        ) from None
    except RecursionError:
        raise UserError(f"{str(path)!r}: the front matter nests too deeply") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise UserError(
            f"{str(path)!r}: the front matter must be a YAML mapping of names to values "
            "(name: ..., description: ...)"
        )
    return data


def parse_skill_md(text: str, *, path: Path) -> tuple[dict[str, object], str]:
    """Split a ``SKILL.md`` into its front matter (YAML) and its body.

    Args:
        text: the file's content.
        path: the file, for error messages.

    Returns:
        ``(fields, body)``: the front matter as YAML reads it (quotes and escapes
        resolved, block scalars kept as YAML folds or keeps them, nested maps such as
        ``metadata`` as dicts), and the body after the closing ``---``, trimmed.

    Raises:
        UserError: naming ``path`` (and the line where YAML knows it): no opening or
            closing ``---``, YAML that does not parse, a front matter that is not a
            mapping, a key given twice, an alias.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise UserError(
            f"{str(path)!r}: a SKILL.md must start with a '---' line that opens "
            "its front matter (name: ..., description: ...)"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise UserError(
            f"{str(path)!r}: the front matter opened on line 1 is never closed by a '---' line"
        )
    fields = _front_matter("".join(f"{x}\n" for x in lines[1:end]), path=path, first_line=2)
    return fields, "\n".join(lines[end + 1 :]).strip()


def check_skill_fields(fields: dict[str, object], *, path: Path, folder: str) -> tuple[str, str]:
    """Check the Agent Skills rules for ``name`` and ``description``.

    ``name``: 1-64 characters of lowercase letters, digits and hyphens, neither starting
    nor ending with a hyphen, no ``--``, and the same as the skill's folder name.
    ``description``: a non-empty string of at most 1024 characters. ``compatibility``,
    when given: a string of at most 500 characters.

    Returns:
        ``(name, description)``, trimmed.

    Raises:
        UserError: naming ``path`` and the rule broken.
    """
    name, description = fields.get("name"), fields.get("description")
    if name is None or (isinstance(name, str) and not name.strip()):
        raise UserError(f"{str(path)!r}: the front matter has no 'name'")
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip()) or "--" in name:
        raise UserError(
            f"{str(path)!r}: name {name!r} must be 1-64 lowercase letters, digits and "
            "hyphens, not starting or ending with a hyphen, without '--' (Agent Skills)"
        )
    name = name.strip()
    if name != folder:
        raise UserError(
            f"{str(path)!r}: name {name!r} must be the skill's folder name, {folder!r} "
            "(Agent Skills); rename one of them"
        )
    if not isinstance(description, str) or not description.strip():
        raise UserError(
            f"{str(path)!r}: the front matter has no 'description' (say when to use the skill)"
        )
    if len(description.strip()) > _DESCRIPTION_RULE:
        raise UserError(
            f"{str(path)!r}: the description has {len(description.strip())} characters; "
            f"at most {_DESCRIPTION_RULE} (Agent Skills)"
        )
    compat = fields.get("compatibility")
    if compat is not None and (not isinstance(compat, str) or len(compat) > 500):
        raise UserError(f"{str(path)!r}: 'compatibility' must be text of at most 500 characters")
    return name, description.strip()


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
    """Read a skill's file as text.

    Beneath ``base`` (the workspace: agent-written, issue 9 item 1), regular files only, at
    most 1 MB; as a plain path when ``base`` is ``None`` (the user's).

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
    name, description = check_skill_fields(fields, path=path, folder=folder.name)
    meta = {k: v for k, v in fields.items() if k not in ("name", "description")}
    script, language = _script_of(folder, base)
    return Skill(
        name=name,
        description=description,
        instructions=body,
        folder=folder,
        script=script,
        language=language,
        meta=meta,
        base=base,
    )


def skill_dirs(workspace: Path) -> list[Path]:
    """Where skills are looked for, first first.

    The workspace's (``.gg/skills``, ``skills``, ``.claude/skills``), then the user's
    (:func:`gg.skillpaths.user_skill_dirs`: ``$GG_SKILLS_DIR`` or
    ``$XDG_CONFIG_HOME/gg/skills``, then ``~/.claude/skills``).
    """
    return [*(workspace / d for d in WORKSPACE_SKILL_DIRS), *user_skill_dirs()]


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
        base = workspace if i < len(WORKSPACE_SKILL_DIRS) else None  # in the workspace
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
    r"""The system prompt's list of skills, or ``""`` when the arm does not offer ``use_skill``.

    Args:
        toolset: the run's resolved toolset arm.
        workspace: the session's workspace, where skills are looked for.

    Returns:
        ``"## Skills\n..."`` with one ``- name: description`` line per skill, or ``""``.

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


def _where(skill: Skill, workspace: Path) -> str:
    """Where a skill's files are, and how to read them (read_file takes these paths)."""
    inside = skill.base is not None
    folder = skill.folder.relative_to(workspace).as_posix() if inside else str(skill.folder)
    files = _files(skill)
    listed = "\n".join(f"- {folder}/{f}" for f in files[:_FILES_LISTED])
    more = f"\n- ... and {len(files) - _FILES_LISTED} more" if len(files) > _FILES_LISTED else ""
    how = "" if inside else " (read-only: read_file takes these absolute paths)"
    return (
        f"## Where this skill lives\nThe skill's folder is {folder}{how}. Paths the "
        f"instructions give are relative to it. Its files:\n{listed or '(none)'}{more}"
    )


def _files(skill: Skill) -> list[str]:
    """The skill folder's regular files but ``SKILL.md``, relative to it, sorted.

    Links and dot-files are skipped; a workspace skill's folder is opened beneath the
    workspace.
    """
    try:
        if skill.base is not None:
            rel = skill.folder.relative_to(skill.base).as_posix()
            fd = open_beneath(skill.base, rel, kind="directory")
        else:
            fd = os.open(skill.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (OSError, ToolError):
        return []
    out: list[str] = []
    try:
        for top, dirs, names, _ in os.fwalk(".", dir_fd=fd):  # links are not followed
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            here = os.path.normpath(top)
            for name in names:
                if name.startswith(".") or (here == "." and name == SKILL_FILE):
                    continue
                out.append(name if here == "." else f"{here}/{name}")
            if len(out) > _MAX_FOLDERS:
                break
    finally:
        os.close(fd)
    return sorted(out)


@tool(access="command")  # runs on-use scripts: read-only for a reviewer
async def use_skill(name: str, *, ctx: ToolContext) -> str:
    """Use a skill: returns its instructions, and the output of its on-use script if it has one.

    Args:
        name: The skill's name, as listed under Skills in the system prompt.
        ctx: The calling session's context (supplied by gg, not in the tool's schema).
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
    parts.append(_where(skill, ctx.workspace))
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
