"""No import cycle inside sim/: the module graph, built from the source with ast, is acyclic.

Every import counts, including those inside functions (a lazy import that only dodges a
cycle is still a cycle); only ``if TYPE_CHECKING:`` blocks are left out, as they never run.
Importing ``a.b.c`` also runs the packages ``a`` and ``a.b``, so those are edges too, except
the importer's own parent packages (already running when it is imported).
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _modules(package: str, root: pathlib.Path) -> dict[str, pathlib.Path]:
    out = {}
    for path in (root / package).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _runtime_imports(tree: ast.AST):
    """Import nodes that can run: everything but the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(importer: str, node, modules) -> list[str]:
    """The modules an import statement names (``from pkg import mod`` names ``pkg.mod``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        pkg = importer.split(".")
        if modules[importer].name != "__init__.py":
            pkg = pkg[:-1]
        pkg = pkg[:len(pkg) - node.level + 1]
        base = ".".join(pkg + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def import_graph(package: str = "sim", root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    """module -> modules of ``package`` (a folder under ``root``) its import statements run."""
    modules = _modules(package, root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in _runtime_imports(ast.parse(path.read_text())):
            for target in _targets(module, node, modules):
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    name = ".".join(parts[:i])
                    own_parent = i < len(parts) and (module == name
                                                      or module.startswith(name + "."))
                    if name in modules and name != module and not own_parent:
                        graph[module].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_sim_has_no_import_cycle():
    graph = import_graph("sim")
    found = cycles(graph)
    assert not found, "import cycles in sim/: " + "; ".join(
        " <-> ".join(c) + " (" + ", ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
        + ")" for c in found)


def test_the_checker_sees_a_lazy_cycle(tmp_path):
    # a function-level import that closes a circle is a cycle; a TYPE_CHECKING one is not
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from pkg import a\n")
    graph = import_graph("pkg", tmp_path)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == set()
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_execution_models_do_not_import_the_ledger_or_pricing():
    # the circle this graph once had: ledger -> pricing -> models -> ledger / pricing
    graph = import_graph("sim")
    for module in graph:
        if module.startswith("sim.execution"):
            assert not graph[module] & {"sim.ledger", "sim.pricing"}, module
