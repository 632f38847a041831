"""Layering: hw_profiles <- sim <- models <- deploy <- neuroedge, and no import circles.

Every top-level package of the repository is known here (:data:`ORDER`, then ``bench``),
so a new package cannot slip past the check. Every source file of a package is parsed and
every import in it is checked, at module level and inside functions alike (a lazy import is
still a dependency), including ``importlib.import_module("...")`` and ``__import__("...")``
with a literal name:

- no package imports one above it in :data:`ORDER`; ``bench`` may import anything and
  nothing imports ``bench``; ``tests`` are not checked;
- inside each package no two modules import each other, directly or round a longer circle
  (the import graph of its modules, relative imports resolved); the method rooms
  (``models/<room>/``, ``models/baselines/<room>/``: a folder with a ``card.py``) are exempt,
  one room being one unit;
- no module imports another module's private name (``from deploy.report import _table``):
  what two modules share belongs, public, to the module that owns it.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ("hw_profiles", "sim", "models", "deploy", "neuroedge")   # lowest first
TOP = "bench"           # may import anything; nothing imports it
UNCHECKED = ("tests",)
LAYERS = (*ORDER, TOP)
NOT_SOURCE = ("build", "dist")   # what packaging leaves beside the sources

# Circles that other work of issue 28 is breaking. strict: once they are gone the mark
# fails, and is taken off.

# -- reading imports --------------------------------------------------------------------------
def module_name(path: Path, root: Path = ROOT) -> str:
    """``deploy/report.py`` -> ``deploy.report``; ``sim/bitwise/__init__.py`` -> ``sim.bitwise``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` bodies: they never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skipped


def _imports(tree: ast.AST, module: str = "", is_package: bool = False,
             runtime_only: bool = False):
    """(line, imported module, names taken from it, relative?) of every import in ``tree``.

    A relative import is resolved against ``module`` (a package's ``__init__`` is its own
    base). ``import a.b`` and a literal ``import_module("a.b")`` take no names. With
    ``runtime_only`` the imports under ``if TYPE_CHECKING:`` (annotations only) are left out:
    they cannot close a circle at run time, but they still may not reach a higher layer.
    """
    out = []
    skipped = _type_checking_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, [], False) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            out.append((node.lineno, target, [a.name for a in node.names], bool(node.level)))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value, [], False))
    return out


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in ``tree`` (a relative import
    cannot leave its top-level package)."""
    return [(line, target.split(".")[0]) for line, target, _, relative in _imports(tree)
            if not relative]


def _sources(package: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


# -- layers ---------------------------------------------------------------------------------
def top_level_packages(root: Path = ROOT) -> set[str]:
    """Every folder at the root that holds Python source (hidden ones and build output aside)."""
    return {d.name for d in root.iterdir()
            if d.is_dir() and not d.name.startswith((".", "_")) and d.name not in NOT_SOURCE
            and not d.name.endswith(".egg-info") and next(d.rglob("*.py"), None) is not None}


def upward_imports(layer: str, root: Path = ROOT) -> list[str]:
    """``path:line imports pkg`` for each import of a layer above ``layer``."""
    above = set(LAYERS[LAYERS.index(layer) + 1:])
    bad = []
    for path in _sources(layer, root):
        tree = ast.parse(path.read_text(), filename=str(path))
        bad += [f"{path.relative_to(root)}:{line} imports {pkg}"
                for line, pkg in _imported(tree) if pkg in above]
    return bad


def test_every_top_level_package_has_a_place():
    assert top_level_packages() == {*LAYERS, *UNCHECKED}


@pytest.mark.parametrize("layer", ORDER)
def test_no_layer_imports_a_higher_one(layer):
    assert upward_imports(layer) == []


def test_the_check_sees_lazy_and_dynamic_imports(tmp_path):
    src = ("import numpy\n"
           "def f():\n"
           "    from deploy.export import EXPORTERS\n"
           "    import models.registry as r\n"
           "    return importlib.import_module('deploy.cli'), __import__('sim')\n"
           "from . import sibling\n")
    assert sorted(_imported(ast.parse(src))) == [(1, "numpy"), (3, "deploy"), (4, "models"),
                                         (5, "deploy"), (5, "sim")]


def test_nothing_imports_bench_and_neuroedge_is_the_top_library_layer(tmp_path):
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "cli.py").write_text("def main():\n    import neuroedge\n")
    (tmp_path / "neuroedge").mkdir()
    (tmp_path / "neuroedge" / "__init__.py").write_text("from bench import _checks\n")
    assert upward_imports("deploy", tmp_path) == ["deploy/cli.py:2 imports neuroedge"]
    assert upward_imports("neuroedge", tmp_path) == ["neuroedge/__init__.py:1 imports bench"]


# -- circles inside a package ---------------------------------------------------------------
def rooms(root: Path = ROOT) -> set[str]:
    """The method rooms: every folder under ``models/`` with a ``card.py``."""
    return {module_name(card.parent / "__init__.py", root)
            for card in (root / "models").rglob("card.py")}


def _in(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def import_graph(package: str, root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {module it imports: line}, both inside ``package``, rooms left out.

    ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to
    ``pkg``; an import of a name that is no module of ``package`` (another package's, a
    third party's) is no edge.
    """
    files = {module_name(p, root): p for p in _sources(package, root)}
    exempt = rooms(root) if package == "models" else set()
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        if _in(module, exempt):
            continue
        edges = graph.setdefault(module, {})
        tree = ast.parse(path.read_text(), filename=str(path))
        for line, target, names, _ in _imports(tree, module, path.name == "__init__.py",
                                               runtime_only=True):
            for wanted in [f"{target}.{n}" for n in names if f"{target}.{n}" in files] or [target]:
                while wanted and wanted not in files:   # the deepest module it names
                    wanted = wanted.rpartition(".")[0]
                if wanted and wanted != module and not _in(wanted, exempt):
                    edges.setdefault(wanted, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every set of two or more modules that import each other round a circle (the strongly
    connected components of ``graph``, Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _describe(graph, circle: list[str]) -> str:
    """The imports that close ``circle``, as ``a -> b (line N of a)``."""
    members = set(circle)
    return "; ".join(f"{a} -> {b} (line {line})"
                     for a in circle for b, line in sorted(graph[a].items()) if b in members)


@pytest.mark.parametrize("package", LAYERS)
def test_no_import_circle_inside_a_package(package):
    graph = import_graph(package)
    assert [_describe(graph, c) for c in circles(graph)] == []


def test_the_circle_check_finds_a_circle_and_resolves_relative_imports(tmp_path):
    pkg = tmp_path / "deploy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "report.py").write_text("from deploy.table import render\n")
    (pkg / "table.py").write_text("def render():\n    from . import terminal\n")   # lazy
    (pkg / "terminal.py").write_text("from deploy import report\nimport numpy\n")
    (pkg / "plots.py").write_text("from deploy.table import render\n")   # in no circle
    graph = import_graph("deploy", tmp_path)
    assert graph["deploy.table"] == {"deploy.terminal": 2}
    assert graph["deploy.terminal"] == {"deploy.report": 1}   # numpy: no edge
    assert circles(graph) == [["deploy.report", "deploy.table", "deploy.terminal"]]
    assert _describe(graph, circles(graph)[0]) == (
        "deploy.report -> deploy.table (line 1); deploy.table -> deploy.terminal (line 2); "
        "deploy.terminal -> deploy.report (line 1)")
    (pkg / "table.py").write_text("def render():\n    pass\n")   # the circle broken
    assert circles(import_graph("deploy", tmp_path)) == []
    # an import for annotations only (never run) closes no circle
    (pkg / "table.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from deploy import terminal\n")
    assert circles(import_graph("deploy", tmp_path)) == []


def test_a_circle_inside_a_room_is_exempt_and_one_through_the_registry_is_not(tmp_path):
    room = tmp_path / "models" / "baselines" / "pc"
    room.mkdir(parents=True)
    for path in (tmp_path / "models", room.parent, room):
        (path / "__init__.py").write_text("")
    (room / "card.py").write_text("from models.baselines.pc import model\n")
    (room / "model.py").write_text("def run():\n    from models.baselines.pc import card\n")
    (tmp_path / "models" / "registry.py").write_text("from models import runner\n")
    (tmp_path / "models" / "runner.py").write_text("from models.registry import get\n")
    assert rooms(tmp_path) == {"models.baselines.pc"}
    assert circles(import_graph("models", tmp_path)) == [["models.registry", "models.runner"]]


# -- private names --------------------------------------------------------------------------
def private_imports(package: str, root: Path = ROOT) -> list[str]:
    """``path:line takes module._name`` for each private name taken from another module of
    the project (a private module such as ``bench._checks`` is a module, not a name)."""
    files = {module_name(p, root) for layer in LAYERS for p in _sources(layer, root)}
    bad = []
    for path in _sources(package, root):
        tree = ast.parse(path.read_text(), filename=str(path))
        me = module_name(path, root)
        for line, target, names, _ in _imports(tree, me, path.name == "__init__.py"):
            if target.split(".")[0] in LAYERS and target != me:
                bad += [f"{path.relative_to(root)}:{line} takes {target}.{n}" for n in names
                        if n.startswith("_") and f"{target}.{n}" not in files]
    return bad


@pytest.mark.parametrize("package", ORDER)
def test_no_module_takes_another_modules_private_name(package):
    assert private_imports(package) == []


def test_the_private_name_check(tmp_path):
    pkg = tmp_path / "deploy"
    pkg.mkdir()
    (pkg / "report.py").write_text("def _table():\n    pass\n")
    (pkg / "_util.py").write_text("")
    (pkg / "terminal.py").write_text("from deploy.report import _table, ENERGY\n"
                                     "from deploy import _util\n")
    assert private_imports("deploy", tmp_path) == [
        "deploy/terminal.py:1 takes deploy.report._table"]


def test_execution_models_do_not_import_the_ledger_or_pricing():
    # the circle sim once had: ledger -> pricing -> execution models -> ledger / pricing; the
    # models read counts through the LedgerCounts protocol and are looked up by pricing
    graph = import_graph("sim")
    for module, edges in graph.items():
        if module.startswith("sim.execution"):
            assert not set(edges) & {"sim.ledger", "sim.pricing"}, module
