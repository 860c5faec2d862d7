"""The package's shape, checked over the real source tree (issue 10, item 6 and "Must show").

Each check reads every module of ``src/gg`` with :mod:`ast` and fails with the list of
offenders, ``path:line`` first:

- no import cycle between gg's modules, counting every import a module makes (top-level,
  ``TYPE_CHECKING``-guarded, inside a function; a constant-string ``__import__`` or
  ``import_module`` too): a cycle hidden behind a lazy import is still a cycle;
- no function over :data:`MAX_LINES` lines, measured on a ``ruff format`` copy of the tree
  (from the ``def`` line to the last line of the body, docstring included);
- no import of a gg module inside a function, except the loaders of an optional extra in
  :data:`EXTRA_LOADERS` (importing a third-party package there is fine: that is how an
  optional extra such as ``llama_cpp`` or ``anthropic`` is loaded);
- no untyped seam: ``ToolContext``, ``SessionEnv``, ``Emit`` and the renderers
  (``gg/render.py``, ``gg/board/display.py``) take and hold typed values, not ``Any``.
"""

from __future__ import annotations

import ast
import itertools
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "gg"
MAX_LINES = 60
"""The longest a function may be, in lines after ``ruff format`` (STYLE: under 60)."""

EXTRA_LOADERS: dict[tuple[str, str, str], str] = {
    ("gg.models.factory", "_import_local", "gg.models.local"): (
        "the embedded model needs the 'local' extra (llama-cpp-python and the bundled"
        " weights); it is imported only when the spec is `local`"
    ),
    ("gg.mcp.hub", "_import_client", "gg.mcp.client"): (
        "MCP servers need the 'mcp' extra (the official mcp SDK); the client module is"
        " imported only when [[tools.mcp]] names a server"
    ),
    ("gg.models.factory", "_import_provider", "gg.models.{}"): (
        "the HTTP providers need the 'providers' extra (the openai or anthropic SDK);"
        " a provider module is imported only when its scheme is chosen"
    ),
    ("gg.cli", "_import_web", "gg.web.server"): (
        "gg serve needs the 'web' extra (starlette and uvicorn); gg.web is imported only"
        " when the command runs"
    ),
    ("gg.telemetry", "_import_otel", "gg.otel"): (
        "OpenTelemetry needs the 'otel' extra (opentelemetry-api and -sdk); gg.otel is"
        " imported only when tracing is on (Agent(otel=True) or the OTEL_* environment)"
    ),
}
"""(module, function, imported module) -> why: the function-level gg imports allowed.

Each one loads a module that needs an optional extra, so that a gg installed without the
extra still imports. ``{}`` stands for the formatted part of a dynamic module name."""

UNTYPED_SEAMS = ("ToolContext", "SessionEnv", "Emit")
"""The seams (classes or type aliases, found anywhere in gg) that must not use ``Any``."""

RENDERERS = ("gg/render.py", "gg/board/display.py")
"""The modules that draw events for the operator: every signature there is typed."""


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement (or dynamic import call) of a gg module, found in the source."""

    module: str
    """The importing module, dotted (``gg.run``)."""
    target: str
    """The imported module, dotted; ``{}`` for a formatted part of a dynamic name."""
    line: int
    function: str | None
    """The qualified name of the enclosing function, or None at module or class level."""


def module_files() -> dict[str, Path]:
    """Every module of the gg package, by dotted name (``gg.sandbox.core``)."""
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = module_files()


def where(module: str, line: int) -> str:
    """``src/gg/x.py:12`` for a module's line, for the offender lists."""
    return f"{MODULES[module].relative_to(REPO)}:{line}"


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The dotted module a ``from ... import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + is_package]
    return ".".join([*base, node.module] if node.module else base)


def _dynamic_name(node: ast.Call) -> str | None:
    """The module name an ``__import__(...)`` / ``import_module(...)`` call imports."""
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name not in ("__import__", "import_module") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in arg.values)
    return None


def _targets(module: str, node: ast.AST) -> list[str]:
    """The gg modules one node imports (none for other nodes or other packages)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = _absolute(module, node)
        subs = [f"{base}.{alias.name}" for alias in node.names]
        names = [sub for sub in subs if sub in MODULES]
        if len(names) < len(subs):  # a name defined in the package itself, not a submodule
            names.append(base)
    elif isinstance(node, ast.Call) and (dynamic := _dynamic_name(node)) is not None:
        names = [dynamic]
    else:
        names = []
    return [name for name in names if name == "gg" or name.startswith("gg.")]


class _ImportFinder(ast.NodeVisitor):
    """Collects a module's gg imports with the function each one sits in."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.scope: list[str] = []
        self.functions: list[str | None] = [None]
        self.found: list[Import] = []

    def _enter(self, node: ast.AST, name: str, *, function: bool) -> None:
        self.scope.append(name)
        self.functions.append(".".join(self.scope) if function else self.functions[-1])
        self.generic_visit(node)
        self.functions.pop()
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._enter(node, node.name, function=False)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._enter(node, node.name, function=True)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._enter(node, node.name, function=True)

    def generic_visit(self, node: ast.AST) -> None:
        for target in _targets(self.module, node):
            line = getattr(node, "lineno", 0)
            self.found.append(Import(self.module, target, line, self.functions[-1]))
        super().generic_visit(node)


def imports(module: str) -> list[Import]:
    """Every gg import ``module`` makes, anywhere in its source."""
    finder = _ImportFinder(module)
    finder.visit(ast.parse(MODULES[module].read_text(encoding="utf-8")))
    return finder.found


def import_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line importing it}}`` over gg's modules."""
    graph: dict[str, dict[str, int]] = {name: {} for name in MODULES}
    for name in MODULES:
        for found in imports(name):
            if found.target in MODULES:
                graph[name].setdefault(found.target, found.line)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan), each sorted by name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def a_cycle(graph: dict[str, dict[str, int]], members: list[str]) -> list[str]:
    """A shortest cycle through ``members[0]`` inside the component (first node repeated)."""
    start, inside = members[0], set(members)
    paths: dict[str, list[str]] = {start: [start]}
    queue = [start]
    for node in queue:
        for nxt in sorted(graph[node]):
            if nxt == start:
                return [*paths[node], start]
            if nxt in inside and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    raise AssertionError(f"no cycle through {start} in {members}")  # not a component


def cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each group of modules that import each other, then a shortest cycle through each of
    its modules (each hop with the line that makes it), duplicates dropped."""
    out: list[str] = []
    for members in strongly_connected(graph):
        if len(members) == 1 and members[0] not in graph[members[0]]:
            continue
        out.append(f"{len(members)} modules import each other: {', '.join(members)}")
        seen: set[frozenset[str]] = set()
        for member in members:
            path = a_cycle(graph, [member, *(m for m in members if m != member)])
            if frozenset(path) not in seen:
                seen.add(frozenset(path))
                hops = [f"{a} ({where(a, graph[a][b])})" for a, b in itertools.pairwise(path)]
                out.append("  " + " -> ".join([*hops, path[0]]))
    return out


def test_no_import_cycle_in_the_package() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles in gg:\n" + "\n".join(found)


def formatted_copy(dest: Path) -> Path:
    """A copy of ``src/gg`` under ``dest``, run through ``ruff format`` with the repo's config."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed (the dev extra): the function sizes need it"
    copy = dest / "gg"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    config = ["--config", str(REPO / "pyproject.toml")]
    done = subprocess.run([ruff, "format", *config, str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return copy


def long_functions(root: Path, limit: int = MAX_LINES) -> Iterator[tuple[str, int, str, int]]:
    """``(path, def line, qualified name, lines)`` for each function over ``limit`` lines."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        yield from _long_in(tree, path.relative_to(root.parent).as_posix(), "", limit)


def _long_in(
    node: ast.AST, path: str, prefix: str, limit: int
) -> Iterator[tuple[str, int, str, int]]:
    """The functions over ``limit`` lines at or below ``node`` (methods, nested ones too)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            size = (child.end_lineno or child.lineno) - child.lineno + 1
            if not isinstance(child, ast.ClassDef) and size > limit:
                yield path, child.lineno, name, size
            yield from _long_in(child, path, f"{name}.", limit)
        else:
            yield from _long_in(child, path, prefix, limit)


def test_no_function_over_60_lines_after_formatting(tmp_path: Path) -> None:
    found = [
        f"src/{path}:{line} {name}: {size} lines"
        for path, line, name, size in long_functions(formatted_copy(tmp_path))
    ]
    assert not found, f"functions over {MAX_LINES} lines:\n" + "\n".join(found)


def test_the_size_measure_counts_from_def_to_the_last_line(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(58))
    source = f'@decorator\ndef f():\n    """Doc."""\n{body}\n\ndef g():\n    pass\n'
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(source)
    assert list(long_functions(tmp_path / "pkg", limit=59)) == [("pkg/m.py", 2, "f", 60)]
    assert list(long_functions(tmp_path / "pkg", limit=60)) == []


def function_level_imports() -> list[str]:
    """The gg imports inside functions that are not in :data:`EXTRA_LOADERS`."""
    out: list[str] = []
    for name in MODULES:
        for found in imports(name):
            key = (found.module, found.function or "", found.target)
            if found.function is not None and key not in EXTRA_LOADERS:
                out.append(f"{where(name, found.line)} {found.function}: {found.target}")
    return out


def test_no_function_level_import_of_a_gg_module() -> None:
    found = function_level_imports()
    assert not found, "gg imports inside functions (move them to the top):\n" + "\n".join(found)


def test_every_allowed_loader_is_still_there() -> None:
    seen = {
        (found.module, found.function, found.target) for name in MODULES for found in imports(name)
    }
    stale = [f"{key}" for key in EXTRA_LOADERS if key not in seen]
    assert not stale, "EXTRA_LOADERS names imports that are gone:\n" + "\n".join(stale)


def _is_any(node: ast.expr) -> bool:
    """``Any`` or ``typing.Any`` (also as a string annotation)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _is_any(ast.parse(node.value, mode="eval").body)
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
    )


def untyped(node: ast.expr | None) -> bool:
    """Whether an annotation leaves a value untyped: ``Any`` itself, one side of a union
    (``Any | None``, ``Optional[Any]``), or a ``Callable`` taking ``...`` or ``Any`` or
    returning ``Any``. ``Any`` as the value type of JSON data (``dict[str, Any]``) is typed
    enough: it is what the wire carries."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return untyped(ast.parse(node.value, mode="eval").body)
    if _is_any(node):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return untyped(node.left) or untyped(node.right)
    if not isinstance(node, ast.Subscript):
        return False
    head = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
    args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if head in ("Optional", "Union"):
        return any(untyped(arg) for arg in args)
    if head == "Callable" and len(args) == 2:
        params, result = args
        ellipsis = isinstance(params, ast.Constant) and params.value is Ellipsis
        listed = params.elts if isinstance(params, ast.List) else []
        return ellipsis or any(untyped(p) for p in listed) or untyped(result)
    return False


def _signature_offenders(node: ast.AST, path: str) -> Iterator[str]:
    """Untyped parameters, returns and class attributes at or below ``node``."""
    for child in ast.walk(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            a = child.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            for param in params:
                if param is not None and untyped(param.annotation):
                    yield f"{path}:{param.lineno} {child.name}({param.arg}: ...)"
            if untyped(child.returns):
                yield f"{path}:{child.lineno} {child.name}(...) -> ..."
        elif isinstance(child, ast.ClassDef):
            for stmt in child.body:
                if isinstance(stmt, ast.AnnAssign) and untyped(stmt.annotation):
                    yield f"{path}:{stmt.lineno} {child.name}.{ast.unparse(stmt.target)}"


def _seam(node: ast.stmt) -> str | None:
    """The seam a top-level statement defines (class or type alias), if it is one."""
    if isinstance(node, ast.ClassDef) and node.name in UNTYPED_SEAMS:
        return node.name
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            name = getattr(target, "id", None)
            if name in UNTYPED_SEAMS:
                return str(name)
    return None


def untyped_seams() -> list[str]:
    """The uses of ``Any`` in the seams and the renderers, and the seams not found."""
    out: list[str] = []
    found: set[str] = set()
    for name, path in MODULES.items():
        rel = path.relative_to(SRC).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if rel in RENDERERS:
            out.extend(_signature_offenders(tree, f"src/{rel}"))
        for stmt in tree.body:
            if (seam := _seam(stmt)) is None:
                continue
            found.add(seam)
            if isinstance(stmt, ast.ClassDef):
                out.extend(_signature_offenders(stmt, str(path.relative_to(REPO))))
            elif isinstance(stmt, ast.Assign | ast.AnnAssign) and untyped(stmt.value):
                value = ast.unparse(stmt.value) if stmt.value else ""
                out.append(f"{where(name, stmt.lineno)} {seam} = {value}")
    out.extend(f"{seam}: not defined anywhere in gg" for seam in UNTYPED_SEAMS if seam not in found)
    return out


def test_no_any_in_the_seams_and_the_renderers() -> None:
    found = untyped_seams()
    assert not found, "untyped seams (Any, Callable[..., ...]):\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("Any", True),
        ("typing.Any", True),
        ("Any | None", True),
        ("Optional[Any]", True),
        ("Callable[..., None]", True),
        ("Callable[[Any], None]", True),
        ("Callable[[Event], Any]", True),
        ("'Any'", True),
        ("Callable[[Event], None]", False),
        ("dict[str, Any]", False),
        ("Event | None", False),
        ("int", False),
    ],
)
def test_what_counts_as_untyped(annotation: str, expected: bool) -> None:
    assert untyped(ast.parse(annotation, mode="eval").body) is expected


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}, "e": {"e": 5}}
    components = [c for c in strongly_connected(graph) if len(c) > 1 or c[0] in graph[c[0]]]
    assert sorted(components) == [["a", "b", "c"], ["e"]]
    assert a_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert a_cycle({"x": {"y": 1}, "y": {"x": 2}}, ["x", "y"]) == ["x", "y", "x"]
