"""Agent Skills as users write them load in gg, and their files are reachable (issue 13
item 4, SPEC T3).

The SKILL.md files below are written for these tests in the shape of Anthropic's public
skills (YAML front matter with quoted and escaped strings, block scalars, a ``metadata``
map, ``allowed-tools``; ``scripts/`` and ``references/`` beside them). They live where
users put them: ``~/.claude/skills``, ``$XDG_CONFIG_HOME/gg/skills`` and the workspace's
``.claude/skills``, and real sessions (scripted model) use them in both modes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gg
from gg.config import settings_from_dict
from gg.models.base import ToolMessage
from gg.skills import discover_skills, load_skill
from gg.stream import ToolResult, read_events
from gg.testing import ScriptedModel, call

PDF_FORMS = """\
---
name: pdf-forms
description: "Fill in PDF forms: reads the form's \\"fields\\" and writes values into them.
  Use when the user asks to fill, complete or inspect a PDF form."
license: Complete terms in LICENSE.txt
allowed-tools:
  - read_file
  - run_command
metadata:
  author: example-team
  version: "1.2"
  tags: [pdf, forms]
---
# PDF forms

1. List the fields with `python3 scripts/list_fields.py FORM.pdf`.
2. Read references/field-types.md before writing a value.
"""

CHANGELOG = """\
---
name: changelog-writer
description: |
  Write a changelog entry from the commits since the last tag.
  Keeps the house style: newest first, one line per change.
compatibility: Needs git on the PATH
---
Run scripts/since_tag.sh, then follow references/style.md.
"""


def _skill(root: Path, name: str, text: str, files: dict[str, str]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(text)
    for rel, body in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(body)
    return folder


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GG_SKILLS_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return home


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def _agent(ws: Path, model: ScriptedModel, mode: str = "tool-calling") -> gg.Agent:
    settings = settings_from_dict(
        {"tools": {"capabilities": ["files", "shell", "skills"]}, "session": {"mode": mode}}
    )
    return gg.Agent(model=model, workspace=ws, settings=settings)


def test_yaml_front_matter_reads_as_yaml(home: Path) -> None:
    folder = _skill(home / ".claude" / "skills", "pdf-forms", PDF_FORMS, {})
    skill = load_skill(folder)
    assert skill.description == (
        'Fill in PDF forms: reads the form\'s "fields" and writes values into them. '
        "Use when the user asks to fill, complete or inspect a PDF form."
    )
    assert skill.meta["metadata"] == {
        "author": "example-team",
        "version": "1.2",
        "tags": ["pdf", "forms"],
    }
    assert skill.meta["allowed-tools"] == ["read_file", "run_command"]
    assert skill.meta["license"] == "Complete terms in LICENSE.txt"
    other = load_skill(_skill(home / "x", "changelog-writer", CHANGELOG, {}))
    assert other.description == (
        "Write a changelog entry from the commits since the last tag.\n"
        "Keeps the house style: newest first, one line per change."
    )


def test_every_place_is_searched(home: Path, ws: Path, tmp_path: Path) -> None:
    _skill(home / ".claude" / "skills", "pdf-forms", PDF_FORMS, {})
    _skill(tmp_path / "xdg" / "gg" / "skills", "changelog-writer", CHANGELOG, {})
    _skill(
        ws / ".claude" / "skills", "local-one", "---\nname: local-one\ndescription: d\n---\n", {}
    )
    assert sorted(discover_skills(ws)) == ["changelog-writer", "local-one", "pdf-forms"]


@pytest.mark.parametrize(
    ("front", "problem"),
    [
        ("name: PDF-Forms\ndescription: d", "lowercase letters"),
        ("name: -bad\ndescription: d", "lowercase letters"),
        ("name: bad-\ndescription: d", "lowercase letters"),
        ("name: two--hyphens\ndescription: d", "lowercase letters"),
        ("name: under_score\ndescription: d", "lowercase letters"),
        (f"name: {'a' * 65}\ndescription: d", "lowercase letters"),
        ("name: other-name\ndescription: d", "must be the skill's folder name"),
        ("name: NAME\ndescription: ''", "lowercase letters"),
        ("name: FOLDER\ndescription: ''", "has no 'description'"),
        ("name: FOLDER\ndescription: [a, b]", "has no 'description'"),
        (f"name: FOLDER\ndescription: {'x' * 1025}", "at most 1024"),
        ("name: FOLDER\ndescription: d\nname: FOLDER", "is given twice"),
        ("name: FOLDER\ndescription: &d d\nlicense: *d", "alias"),
        ("name: FOLDER\ndescription: 'unclosed", "not valid YAML"),
        ("- name\n- description", "must be a YAML mapping"),
    ],
)
def test_broken_rules_are_errors_naming_the_file(
    home: Path, ws: Path, front: str, problem: str
) -> None:
    root = ws / ".claude" / "skills"
    folder = _skill(root, "my-skill", f"---\n{front.replace('FOLDER', 'my-skill')}\n---\n", {})
    with pytest.raises(gg.UserError, match=problem) as info:
        load_skill(folder, ws)
    assert str(folder / "SKILL.md") in str(info.value)


FILES = {
    "scripts/list_fields.py": "print('fields: name, date')\n",
    "references/field-types.md": "# Field types\nDates are YYYY-MM-DD.\n",
    "LICENSE.txt": "terms\n",
}


def test_use_skill_says_where_and_read_file_reaches_the_files(home: Path, ws: Path) -> None:
    folder = _skill(home / ".claude" / "skills", "pdf-forms", PDF_FORMS, FILES)
    (home / "secret.txt").write_text("not for the agent")
    reference = f"{folder}/references/field-types.md"
    model = ScriptedModel(
        [
            call("use_skill", name="pdf-forms"),
            call("read_file", path=reference),
            call("read_file", path=f"{folder}/../../secret.txt"),
            call("read_file", path=str(home / "secret.txt")),
            call("write_file", path=f"{folder}/scripts/list_fields.py", content="evil"),
            call("finish", summary="read the skill"),
        ]
    )
    assert _agent(ws, model).run("fill the form").status == "ended"
    told = [m.content for m in model.calls[-1][0] if isinstance(m, ToolMessage)]
    used, read, climb, outside, write = told[-5:]
    assert f"The skill's folder is {folder}" in used
    assert f"- {folder}/scripts/list_fields.py" in used and f"- {reference}" in used
    assert read == "# Field types\nDates are YYYY-MM-DD.\n"
    assert climb.startswith("Error:") and "not for the agent" not in climb
    assert outside.startswith("Error:") and "not for the agent" not in outside
    assert write.startswith("Error:")
    assert (folder / "scripts" / "list_fields.py").read_text() == FILES["scripts/list_fields.py"]


def test_a_link_in_a_skill_folder_is_not_followed(home: Path, ws: Path) -> None:
    folder = _skill(home / ".claude" / "skills", "pdf-forms", PDF_FORMS, FILES)
    (home / "secret.txt").write_text("not for the agent")
    (folder / "references" / "sneaky.md").symlink_to(home / "secret.txt")
    model = ScriptedModel(
        [call("read_file", path=f"{folder}/references/sneaky.md"), call("finish", summary="x")]
    )
    assert _agent(ws, model).run("t").status == "ended"
    told = [m for m in model.calls[-1][0] if isinstance(m, ToolMessage)][-1].content
    assert told.startswith("Error:") and "not for the agent" not in told


def test_a_program_reads_a_skill_file(home: Path, ws: Path) -> None:
    folder = _skill(home / ".claude" / "skills", "pdf-forms", PDF_FORMS, FILES)
    program = (
        f"text = gg.tools.read_file(path={str(folder / 'references' / 'field-types.md')!r})\n"
        "print(text.splitlines()[1])\n"
        "gg.session.finish('read it')\n"
    )
    model = ScriptedModel([call("submit_program", program=program)])
    result = _agent(ws, model, mode="code").run("t")
    assert result.status == "ended", result.diagnosis
    reads = [e for e in read_events(result.stream) if isinstance(e, ToolResult)]
    assert any(e.name == "read_file" and e.ok and "Field types" in e.excerpt for e in reads)
