"""Registry tools, arms and built-ins on real temporary workspaces (SPEC T1, §1, §10)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from gg.errors import ToolError, UserError, WorkspaceEscape
from gg.models.base import ToolSpec
from gg.text import cut
from gg.tools import (
    ArgumentsError,
    Registry,
    Tool,
    ToolContext,
    ToolsetArm,
    default_registry,
    tool,
)
from gg.tools.safefs import Beneath

# ---------------------------------------------------------------- helpers


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ToolContext(workspace=ws)


async def run(t: Tool, ctx: ToolContext, **arguments: Any) -> str:
    return await t.call(t.validate(arguments), ctx)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def wait_dead(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


# ---------------------------------------------------------------- schema


@tool
def greet(name: str, times: int = 1, loud: bool = False) -> str:
    """Greet someone.

    Says hello as often as asked.

    Args:
        name: Who to greet.
        times: How many greetings.
        loud: Shout them.
    """
    text = " ".join([f"hello {name}"] * times)
    return text.upper() if loud else text


def test_schema_from_hints_and_google_docstring() -> None:
    params = greet.parameters
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert params["required"] == ["name"]
    assert params["properties"] == {
        "name": {"type": "string", "description": "Who to greet."},
        "times": {"type": "integer", "default": 1, "description": "How many greetings."},
        "loud": {"type": "boolean", "default": False, "description": "Shout them."},
    }
    assert "title" not in params
    assert greet.description == "Greet someone.\n\nSays hello as often as asked."
    assert greet.spec() == ToolSpec(name="greet", description=greet.description, parameters=params)


def test_schema_from_numpy_docstring_and_constraints() -> None:
    @tool(name="scale", description="Scale a list.")
    def scale_values(values: list[float], factor: Annotated[float, Field(gt=0)] = 2.0) -> Any:
        """Scale.

        Parameters
        ----------
        values
            The numbers.
        factor
            Multiplier, positive.
        """
        return [v * factor for v in values]

    assert scale_values.name == "scale"
    assert scale_values.description == "Scale a list."
    props = scale_values.parameters["properties"]
    assert props["values"] == {
        "type": "array",
        "items": {"type": "number"},
        "description": "The numbers.",
    }
    assert props["factor"]["exclusiveMinimum"] == 0
    assert props["factor"]["description"] == "Multiplier, positive."


def test_property_named_title_is_kept() -> None:
    @tool
    def rename(title: str, model_name: str = "x", json: int = 0) -> str:
        """Rename."""
        return f"{title}/{model_name}/{json}"

    assert set(rename.parameters["properties"]) == {"title", "model_name", "json"}
    assert rename.validate({"title": "t", "json": 3}) == {
        "title": "t",
        "model_name": "x",
        "json": 3,
    }


def test_no_parameters_and_no_docstring() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert ping.description == ""


# ---------------------------------------------------------------- validation and calls


def test_validation_errors_name_each_field() -> None:
    with pytest.raises(ArgumentsError) as err:
        greet.validate({"times": "many", "colour": "red"})
    message = str(err.value)
    assert "missing required argument 'name'" in message
    assert "argument 'times'" in message and "integer" in message
    assert "unexpected argument 'colour'" in message
    assert "greet takes: name (required), times (optional), loud (optional)" in message
    assert err.value.tool == "greet"
    assert len(err.value.problems) == 3


def test_validation_refuses_non_objects_and_coerces_lax_values() -> None:
    with pytest.raises(ArgumentsError, match="must be a JSON object"):
        greet.validate(["x"])  # type: ignore[arg-type]
    assert greet.validate({"name": "a", "times": "2"}) == {"name": "a", "times": 2, "loud": False}


async def test_call_sync_async_and_ctx(ctx: ToolContext) -> None:
    @tool
    async def where(sub: str, ctx: ToolContext) -> str:
        """Say where.

        Args:
            sub: A sub-path.
        """
        await asyncio.sleep(0)
        return str(ctx.workspace / sub)

    assert "ctx" not in where.parameters["properties"]
    assert await run(where, ctx, sub="a") == str(ctx.workspace / "a")
    assert await run(greet, ctx, name="bo", times=2, loud=True) == "HELLO BO HELLO BO"


async def test_call_wraps_exceptions_into_tool_error(ctx: ToolContext) -> None:
    @tool
    def boom(kind: str) -> str:
        """Fail."""
        if kind == "tool":
            raise ToolError("told you")
        raise ValueError("bad value")

    with pytest.raises(ToolError, match=r"^boom raised ValueError: bad value$"):
        await run(boom, ctx, kind="value")
    with pytest.raises(ToolError, match=r"^told you$"):
        await run(boom, ctx, kind="tool")


async def test_results_become_text_and_are_capped(tmp_path: Path) -> None:
    @tool
    def value(kind: str) -> Any:
        """Return things."""
        return {"none": None, "dict": {"a": [1, "é"]}, "big": "x" * 10_000}[kind]

    small = ToolContext(workspace=tmp_path, output_cap=1_000)
    assert await run(value, small, kind="none") == "(no output)"
    assert await run(value, small, kind="dict") == '{"a": [1, "é"]}'
    big = await run(value, small, kind="big")
    assert len(big) <= 1_000
    assert "characters cut" in big and big.startswith("x") and big.endswith("x")


@given(st.text(max_size=3_000), st.integers(min_value=60, max_value=2_000))
def test_cut_bounds_with_the_head_and_tail_kept(text: str, cap: int) -> None:
    out = cut(text, cap, keep="middle")
    assert len(out) <= cap
    if len(text) <= cap:
        assert out == text
    else:
        head, marker_and_tail = out.split("\n[… ", 1)
        assert text.startswith(head)
        assert text.endswith(marker_and_tail.split(" characters cut …]\n", 1)[1])


async def test_trivial_tool_is_fast(ctx: ToolContext) -> None:
    @tool
    def add(a: int, b: int = 1) -> str:
        """Add."""
        return str(a + b)

    n = 5_000
    start = time.perf_counter()
    for i in range(n):
        await add.call(add.validate({"a": i}), ctx)
    per_call_us = (time.perf_counter() - start) / n * 1e6
    assert per_call_us < 100, per_call_us  # a few µs in practice; generous for slow CI


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("name", ["finish", "approve", "request_changes", "requestChanges"])
def test_ending_named_tools_are_refused(name: str) -> None:
    def fn() -> str:
        return ""

    fn.__name__ = name
    with pytest.raises(UserError, match="ending calls are never registry tools"):
        tool(fn)
    with pytest.raises(UserError, match="ending calls are never registry tools"):
        tool(name=name)(lambda: "")
    with pytest.raises(UserError, match="ending calls are never registry tools"):
        Tool(name=name, description="", parameters={"type": "object"})


@pytest.mark.parametrize("name", ["my-tool", "class", "1st", "", "x" * 65])
def test_unusable_names_are_refused(name: str) -> None:
    with pytest.raises(UserError):
        tool(name=name)(lambda: "")


def test_positional_only_and_varargs_are_refused() -> None:
    def pos(a: int, /) -> str:
        return ""

    def var(*args: int) -> str:
        return ""

    for fn in (pos, var):
        with pytest.raises(UserError, match="passable by keyword"):
            tool(fn)


def test_registry_refuses_duplicates_and_non_tools() -> None:
    registry = Registry()
    registry.register(greet)
    with pytest.raises(UserError, match="already registered"):
        registry.register(greet, capability="other")
    with pytest.raises(UserError, match="only Tool objects"):
        registry.register(lambda: "")  # type: ignore[arg-type]
    assert registry.capabilities == {"user": ("greet",)}
    assert registry.get("greet") is greet and registry.get("nope") is None


# ---------------------------------------------------------------- arms


def arm_registry() -> Registry:
    registry = default_registry()
    registry.register(greet)
    return registry


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


def test_default_arm_offers_everything_in_registration_order() -> None:
    registry = arm_registry()
    assert registry.capabilities == {
        "files": ("read_file", "write_file", "edit_file", "list_dir", "search_text"),
        "shell": ("run_command",),
        "user": ("greet",),
    }
    assert names(ToolsetArm().select(registry)) == list(registry.names)


def test_arm_filters_by_capability_offer_and_withhold() -> None:
    registry = arm_registry()
    read_only = ToolsetArm(name="read-only", capabilities=("files",), withhold=("write_file",))
    assert names(read_only.select(registry)) == ["read_file", "list_dir", "search_text"]
    picked = ToolsetArm(name="picked", offer=["greet", "read_file", "greet"])  # type: ignore[arg-type]
    assert picked.offer == ("greet", "read_file", "greet")
    assert names(picked.select(registry)) == ["greet", "read_file"]
    none = ToolsetArm(name="bare", capabilities=())
    assert none.select(registry) == []
    # a filter, not a copy: a tool registered later shows up
    registry.register(tool(name="later")(lambda: ""))
    assert "later" in names(ToolsetArm().select(registry))


def test_arm_errors_name_the_arm_and_the_unknown_thing() -> None:
    registry = arm_registry()
    with pytest.raises(UserError, match=r"arm 'x' names unknown capability 'net'"):
        ToolsetArm(name="x", capabilities=("net",)).select(registry)
    with pytest.raises(UserError, match=r"arm 'x' names unknown tool 'fly'"):
        ToolsetArm(name="x", offer=("fly",)).select(registry)
    with pytest.raises(UserError, match=r"arm 'x' names unknown tool 'fly'"):
        ToolsetArm(name="x", withhold=("fly",)).select(registry)
    with pytest.raises(UserError, match=r"arm 'x' offers 'run_command'.*'shell'"):
        ToolsetArm(name="x", capabilities=("files",), offer=("run_command",)).select(registry)


@pytest.mark.parametrize("field", ["offer", "withhold"])
@pytest.mark.parametrize("name", ["finish", "approve", "request_changes", "requestChanges"])
def test_arm_offering_or_withholding_an_ending_is_refused(field: str, name: str) -> None:
    with pytest.raises(UserError) as err:
        ToolsetArm(name="sneaky", **{field: (name,)})
    message = str(err.value)
    assert "'sneaky'" in message and repr(name) in message
    assert "ending calls are never registry tools: no arm offers or withholds them" in message


# ---------------------------------------------------------------- built-ins: files


async def test_write_then_read_creates_parents(ctx: ToolContext) -> None:
    reg = default_registry()
    write, read = reg.get("write_file"), reg.get("read_file")
    assert write is not None and read is not None
    out = await run(write, ctx, path="a/b/c.txt", content="héllo\n")
    assert out == "wrote 6 characters to a/b/c.txt"
    assert (ctx.workspace / "a/b/c.txt").read_text(encoding="utf-8") == "héllo\n"
    assert await run(read, ctx, path="a/b/c.txt") == "héllo\n"


async def test_read_file_errors_are_tool_errors(ctx: ToolContext) -> None:
    read = default_registry().get("read_file")
    assert read is not None
    with pytest.raises(ToolError, match=r"no such file: 'missing\.txt'"):
        await run(read, ctx, path="missing.txt")
    (ctx.workspace / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await run(read, ctx, path="d")
    (ctx.workspace / "bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="binary file"):
        await run(read, ctx, path="bin")


async def test_read_file_output_is_capped(tmp_path: Path) -> None:
    small = ToolContext(workspace=tmp_path, output_cap=500)
    (tmp_path / "big.txt").write_text("line\n" * 1_000)
    read = default_registry().get("read_file")
    assert read is not None
    text = await run(read, small, path="big.txt")
    assert len(text) <= 500 and "characters cut" in text


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside.txt"
    secret.write_text("secret")
    return secret


@pytest.mark.parametrize(
    "tool_name", ["read_file", "write_file", "edit_file", "list_dir", "search_text"]
)
async def test_every_path_tool_refuses_escapes(
    ctx: ToolContext, outside: Path, tool_name: str
) -> None:
    (ctx.workspace / "link").symlink_to(outside)
    (ctx.workspace / "dirlink").symlink_to(outside.parent)
    t = default_registry().get(tool_name)
    assert t is not None
    extra = {"content": "x"} if tool_name == "write_file" else {}
    extra |= {"pattern": "secret"} if tool_name == "search_text" else {}
    extra |= {"old": "secret", "new": "x"} if tool_name == "edit_file" else {}
    cases = {
        "../outside.txt": "leaves the workspace",
        "a/../../outside.txt": "leaves the workspace",
        "/etc/passwd": "is absolute",
        str(outside): "is absolute",
        "link": "through a symbolic link",
        "dirlink/outside.txt": "through a symbolic link",
    }
    for path, why in cases.items():
        with pytest.raises(WorkspaceEscape, match=why):
            await run(t, ctx, path=path, **extra)
    assert outside.read_text() == "secret"


@pytest.fixture(scope="module")
def hypo_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with ``a/`` and ``b/``, alone in a parent directory of its own: the test
    checks that parent for strays, so nothing else (a parallel test worker's temp files)
    may write there."""
    ws = tmp_path_factory.mktemp("hypothesis") / "ws"
    (ws / "a").mkdir(parents=True)
    (ws / "b").mkdir()
    return ws


@given(
    st.lists(st.sampled_from(["a", "b", "..", ".", "a/..", "../a", "c"]), min_size=1, max_size=6)
)
def test_a_write_never_lands_outside_the_workspace(hypo_ws: Path, parts: list[str]) -> None:
    path = "/".join(parts)
    outside = set(hypo_ws.parent.iterdir())
    try:
        with Beneath(hypo_ws) as root:
            written = root.write(path, b"x")
    except (WorkspaceEscape, ToolError):
        return  # refused (leaves the workspace, or names a directory)
    assert (hypo_ws / written).resolve().is_relative_to(hypo_ws.resolve())
    assert set(hypo_ws.parent.iterdir()) <= outside | {hypo_ws}


async def test_list_dir(ctx: ToolContext) -> None:
    (ctx.workspace / "src").mkdir()
    (ctx.workspace / "b.txt").write_text("")
    (ctx.workspace / "a.txt").write_text("")
    (ctx.workspace / "ln").symlink_to(ctx.workspace / "a.txt")
    ls = default_registry().get("list_dir")
    assert ls is not None
    assert await run(ls, ctx) == "a.txt\nb.txt\nln@\nsrc/"
    assert await run(ls, ctx, path="src") == "src is empty"
    with pytest.raises(ToolError, match="no such directory"):
        await run(ls, ctx, path="nope")
    with pytest.raises(ToolError, match="is a file"):
        await run(ls, ctx, path="a.txt")


async def test_search_text(ctx: ToolContext) -> None:
    ws = ctx.workspace
    (ws / "pkg").mkdir()
    (ws / "pkg/mod.py").write_text("import os\ndef main():\n    return 42\n")
    (ws / "notes.md").write_text("main idea\n")
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("main branch\n")
    (ws / "blob.bin").write_bytes(b"main\x00\x00")
    search = default_registry().get("search_text")
    assert search is not None
    assert (
        await run(search, ctx, pattern=r"\bmain\b")
        == "notes.md:1: main idea\npkg/mod.py:2: def main():"
    )
    assert (
        await run(search, ctx, pattern="return", path="pkg/mod.py") == "pkg/mod.py:3:     return 42"
    )
    assert await run(search, ctx, pattern="zzz") == "no match for 'zzz' in ."
    with pytest.raises(ToolError, match="invalid regular expression"):
        await run(search, ctx, pattern="(")
    with pytest.raises(ToolError, match="no such file or directory"):
        await run(search, ctx, pattern="x", path="nope")


async def test_search_text_hits_are_bounded(ctx: ToolContext) -> None:
    (ctx.workspace / "many.txt").write_text("hit\n" * 1_000)
    search = default_registry().get("search_text")
    assert search is not None
    lines = (await run(search, ctx, pattern="hit")).splitlines()
    assert len(lines) == 201
    assert lines[-1].startswith("[stopped at 200 hits")


# ---------------------------------------------------------------- built-ins: run_command


def run_command_tool() -> Tool:
    t = default_registry().get("run_command")
    assert t is not None
    return t


async def test_run_command_output_and_exit_code(ctx: ToolContext) -> None:
    rc = run_command_tool()
    assert (
        await run(rc, ctx, command="echo out; echo err >&2")
        == "exit code: 0\nstdout:\nout\nstderr:\nerr"
    )
    assert await run(rc, ctx, command="exit 3") == "exit code: 3\n(no output)"
    assert await run(rc, ctx, command="pwd") == f"exit code: 0\nstdout:\n{ctx.workspace}"


async def test_run_command_arguments_are_checked() -> None:
    rc = run_command_tool()
    with pytest.raises(ArgumentsError, match="'timeout_s'"):
        rc.validate({"command": "true", "timeout_s": 0})
    with pytest.raises(ArgumentsError, match="'command'"):
        rc.validate({"command": ""})
    assert rc.validate({"command": "true"}) == {"command": "true", "timeout_s": 60}


async def test_run_command_timeout_kills_its_children(ctx: ToolContext) -> None:
    rc = run_command_tool()
    start = time.monotonic()
    with pytest.raises(ToolError, match=r"^command timed out after 0.5 s") as err:
        await run(
            rc, ctx, command="sleep 30 & echo $! > child.pid; echo started; wait", timeout_s=0.5
        )
    assert time.monotonic() - start < 5
    assert "started" in str(err.value)
    pid = int((ctx.workspace / "child.pid").read_text())
    assert await wait_dead(pid)


async def test_run_command_does_not_wait_for_background_jobs(ctx: ToolContext) -> None:
    rc = run_command_tool()
    start = time.monotonic()
    out = await run(rc, ctx, command="sleep 30 & echo $! > bg.pid; echo done", timeout_s=20)
    assert out == "exit code: 0\nstdout:\ndone"
    assert time.monotonic() - start < 5
    assert await wait_dead(int((ctx.workspace / "bg.pid").read_text()))


async def test_run_command_output_cap(tmp_path: Path) -> None:
    small = ToolContext(workspace=tmp_path, output_cap=2_000)
    out = await run(run_command_tool(), small, command="seq 1 100000")
    assert len(out) <= 2_000
    assert "cut" in out and out.rstrip().endswith("100000")


async def test_run_command_environment_is_scrubbed(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("GG_TEST_SECRET_TOKEN", "hunter2")
    out = await run(run_command_tool(), ctx, command="env")
    assert "sk-test-not-a-real-key" not in out and "OPENAI_API_KEY" not in out
    assert "hunter2" not in out
    assert f"PATH={os.environ['PATH']}" in out


async def test_run_command_missing_workspace_is_a_tool_error(tmp_path: Path) -> None:
    gone = ToolContext(workspace=tmp_path / "gone")
    with pytest.raises(ToolError, match="could not start"):
        await run(run_command_tool(), gone, command="true")


@pytest.mark.parametrize("existing", [False, True])
def test_a_write_killed_midway_leaves_nothing_named(tmp_path: Path, existing: bool) -> None:
    """SIGKILL in the middle of a write: no temporary file, the old content or no file (issue 12).

    A child process writes through the real ``Beneath.write`` and is killed by a real
    SIGKILL half way through its data. (A child process, not ``os.fork``: a fork of a
    threaded pytest worker can deadlock on a lock another thread held.)
    """
    ws = tmp_path / "ws"
    ws.mkdir()
    if existing:
        (ws / "f.txt").write_text("old\n")
    child = (
        "import os, signal, sys\n"
        "import gg.tools.safefs as safefs\n"
        "def half_then_die(fd, data):\n"
        "    os.write(fd, data[: len(data) // 2])\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "safefs._write_all = half_then_die\n"
        "with safefs.Beneath(sys.argv[1]) as root:\n"
        "    root.write('f.txt', b'new content\\n' * 1000)\n"
    )
    done = subprocess.run([sys.executable, "-c", child, str(ws)], capture_output=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    assert sorted(p.name for p in ws.iterdir()) == (["f.txt"] if existing else [])
    if existing:
        assert (ws / "f.txt").read_text() == "old\n"
