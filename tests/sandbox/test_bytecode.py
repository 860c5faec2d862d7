"""The guest's compiled code (gg.sandbox.bytecode, issue 11): used when it fits the
sandbox's interpreter, never trusted when it does not, and what every sandbox runs."""

from __future__ import annotations

import importlib.util
import marshal
import subprocess
from pathlib import Path

import pytest
from sandbox_support import Arena, Recorder

from gg.sandbox import Isolation, Sandbox, launch
from gg.sandbox.bytecode import BOOT_STUB, COMPILED, compiled
from gg.sandbox.host import GUEST_DIR, host_facts


def _stub_run(tmp_path: Path, header: bytes | None) -> str:
    """Run BOOT_STUB with the sandbox's interpreter on a source printing ``source`` and a
    ``.pyc`` (``header`` + code printing ``compiled``; ``None``: no file); its output."""
    source = tmp_path / "boot.py"
    source.write_text("print('source', __name__)\n")
    pyc = tmp_path / "boot.pyc"
    if header is not None:
        pyc.write_bytes(header + marshal.dumps(compile("print('compiled', __name__)", "b", "exec")))
    stub = BOOT_STUB.format(pyc=str(pyc), source=str(source))
    python = host_facts().python
    done = subprocess.run(
        [python, "-I", "-S", "-B", "-c", stub, "arg"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _magic_of(python: str) -> bytes:
    code = "import sys, _frozen_importlib_external as i; sys.stdout.buffer.write(i.MAGIC_NUMBER)"
    return subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, check=True).stdout


def test_the_stub_runs_the_compiled_code_only_under_its_own_magic_number(tmp_path: Path) -> None:
    magic = _magic_of(host_facts().python)
    assert _stub_run(tmp_path, magic + bytes(12)) == "compiled __main__"
    other = bytes([magic[0] ^ 0xFF]) + magic[1:]  # another interpreter's code: not run
    assert _stub_run(tmp_path, other + bytes(12)) == "source __main__"
    assert _stub_run(tmp_path, None) == "source __main__"  # no file: the source
    assert _stub_run(tmp_path, b"") == "source __main__"  # an empty one too


def test_each_guest_file_compiles_to_its_own_source_code() -> None:
    for name in COMPILED:
        data = compiled(name, "/gg/guest")
        assert data[:4] == importlib.util.MAGIC_NUMBER and data[4:16] == bytes(12)
        code = marshal.loads(data[16:])
        assert code.co_filename == f"/gg/guest/{name}"
        source = (GUEST_DIR / name).read_text()
        assert code.co_consts == compile(source, f"/gg/guest/{name}", "exec").co_consts


def _marked(run_dir: Path, guest_dir: str, names: tuple[str, ...] = COMPILED) -> None:
    """write_compiled, with a boot that says it was the compiled one (on stderr)."""
    for name in names:
        (run_dir / f"{name}c").write_bytes(compiled(name, guest_dir))
    source = (GUEST_DIR / "boot.py").read_text()
    marked = source.replace(
        'if __name__ == "__main__":', 'os.write(2, b"compiled-boot\\n")\nif __name__ == "__main__":'
    )
    assert marked != source
    code = compile(marked, f"{guest_dir}/boot.py", "exec", dont_inherit=True)
    (run_dir / "boot.pyc").write_bytes(
        importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)
    )


async def test_every_layer_boots_from_the_compiled_code(
    sandbox: Sandbox, arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shell command and a JavaScript program (each its own boot) run from the code gg
    wrote into the run's directory, wherever the sandbox's interpreter is gg's version."""
    monkeypatch.setattr(launch, "write_compiled", _marked)
    sandbox.forked_js = False  # a Deno started whole boots on its own (a forked one: its zygote)
    same = _magic_of(host_facts().python) == importlib.util.MAGIC_NUMBER
    mark = "compiled-boot\n" if same else ""
    shell = await sandbox.run_shell("echo hi", workspace=arena.workspace, timeout_s=20)
    assert shell.output == mark + "hi\n", shell
    for _ in range(2):  # a cold start, then a warm spare
        result = await sandbox.run(
            "console.log(1 + 1)", language="javascript", workspace=arena.workspace, tools=[],
            handler=Recorder(),
        )  # fmt: skip
        assert (result.output, result.error) == (mark + "2\n", None)


def test_a_run_directory_gets_only_the_code_its_process_loads(tmp_path: Path) -> None:
    expected = {
        "zygote": ["boot.pyc", "runner.pyc", "zygote.pyc"],
        "python": ["boot.pyc", "runner.pyc"],
        "javascript": ["boot.pyc"],
        "shell": ["boot.pyc"],
    }
    for mode, names in expected.items():
        run_dir = tmp_path / mode
        run_dir.mkdir()
        launch.prepare_run_dir(run_dir, uid=None, isolation=Isolation.BWRAP, mode=mode)  # type: ignore[arg-type]
        assert sorted(p.name for p in run_dir.glob("*.pyc")) == names, mode
