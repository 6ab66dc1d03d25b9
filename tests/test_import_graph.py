"""The import graph of phoneenv, agents, apps and rl, read from the source (``ast``): module-level
and function-level imports both count (a lazy import is still a dependency), imports under
``if TYPE_CHECKING:`` do not. A circle is a group of modules that reach one another.

There are none: a circle fails the test naming its modules and one path around it. ``KNOWN``
is where a circle would be listed while it is being broken (the test also fails when a listed
one is gone, so the list stays true)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("phoneenv", "agents", "apps", "rl")

KNOWN: set[frozenset[str]] = set()


def modules() -> dict[str, Path]:
    out = {}
    for base in PACKAGES:
        for p in (ROOT / base).rglob("*.py"):
            if "__pycache__" in p.parts:
                continue
            name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = p
    return out


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of these packages it imports (an imported name that is a submodule
    counts as that submodule)."""
    mods = modules()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]

        def visit(node: ast.AST, mod: str = mod, package: str = package) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                targets: list[str] = []
                if isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        parts = package.split(".")
                        up = parts[: len(parts) - (child.level - 1)]
                        base = ".".join([*up, *([child.module] if child.module else [])])
                    targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in child.names]
                for t in targets:
                    if (o := owner(t)) is not None and o != mod:
                        graph[mod].add(o)
                visit(child)

        visit(ast.parse(path.read_text(encoding="utf-8")))
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.add(w)
                    if w == v:
                        break
                if len(group) > 1:
                    out.append(frozenset(group))
    return out


def path_around(graph: dict[str, set[str]], group: frozenset[str]) -> list[str]:
    """One cycle through ``group``: from its first module back to it, within the group."""
    start = min(group)
    prev = {start: ""}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    path = [v]
                    while prev[path[-1]]:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def test_the_graph_is_read_from_the_source():
    graph = import_graph()
    assert "phoneenv.contract" in graph["phoneenv.env"]  # a module-level import
    assert "phoneenv.tasks" in graph["phoneenv.env"]  # a function-level one counts too
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert path_around({"a": {"b"}, "b": {"a"}}, frozenset("ab")) == ["a", "b", "a"]


def test_no_new_import_circle():
    graph = import_graph()
    found = set(circles(graph))
    new = [g for g in found if g not in KNOWN]
    assert not new, "new import circles: " + "; ".join(" -> ".join(path_around(graph, g)) for g in new)
    gone = [sorted(g) for g in KNOWN - found]
    assert not gone, f"circles broken (remove them from KNOWN): {gone}"


def _is_cli(module: str) -> bool:
    return module in ("phoneenv.cli", "phoneenv.__main__") or module.startswith("phoneenv.cli.")


def test_the_library_never_imports_the_command_line():
    graph = import_graph()
    assert _is_cli("phoneenv.cli.evolve") and not _is_cli("phoneenv.evaluation") and not _is_cli("phoneenv.client")
    reach = sorted(f"{m} -> {t}" for m, ts in graph.items() if not _is_cli(m) for t in ts if _is_cli(t))
    assert reach == []


def test_the_command_line_is_one_package():
    """Every command group is a module of ``phoneenv/cli/``; none lies loose beside the library."""
    loose = sorted(m for m in import_graph() if m.endswith("_cli") or m.endswith(".cli_errors"))
    assert loose == []
    groups = {p.stem for p in (Path(__file__).parent.parent / "phoneenv" / "cli").glob("*.py")}
    assert {
        "evaluate",
        "tasks",
        "view",
        "farm",
        "device",
        "mcp",
        "traces",
        "review",
        "propose",
        "evolve",
        "train",
    } <= groups


def private_imports(paths: dict[str, Path]) -> list[str]:
    """``module: from X import _name`` for every import of another module's private name
    (a leading underscore, dunders aside) in ``paths``."""
    found = []
    for mod, path in sorted(paths.items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
                found += [
                    f"{mod}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    return found


def test_no_module_imports_another_modules_private_name(tmp_path):
    """The seams between modules are public names: a private one imported elsewhere is a seam
    nobody documented (benchmarks count as library code here; tests may reach inside)."""
    paths = modules() | {f"benchmarks.{p.stem}": p for p in (ROOT / "benchmarks").glob("*.py")}
    assert private_imports(paths) == []
    (tmp_path / "m.py").write_text("from phoneenv.env import _secret, __version__, public\n")
    assert private_imports({"m": tmp_path / "m.py"}) == ["m: from phoneenv.env import _secret"]


def test_the_command_line_needs_no_undeclared_click():
    """typer vendors click and does not install it: importing ``click`` works here (other
    packages bring it) but not in the Docker images, where it broke every command."""
    found = []
    for mod, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{mod}: {n}" for n in names if n.split(".")[0] == "click"]
    assert found == []
