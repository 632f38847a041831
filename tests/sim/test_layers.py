"""Layering: hw_profiles <- sim <- models <- deploy; no module imports a layer above its own.

Every source file of a layer is parsed and every import in it is checked, at module level
and inside functions alike (a lazy import is still a dependency), including
``importlib.import_module("...")`` and ``__import__("...")`` with a literal name. Nothing
is exempt. Relative imports cannot leave their top-level package, so they are not checked.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORDER = ("hw_profiles", "sim", "models", "deploy")   # lowest first
CHECKED = ("hw_profiles", "sim", "models")


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value.split(".")[0]))
    return out


def upward_imports(layer: str) -> list[str]:
    """``path:line imports pkg`` for each import of a layer above ``layer``."""
    above = set(ORDER[ORDER.index(layer) + 1:])
    bad = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        bad += [f"{path.relative_to(ROOT)}:{line} imports {pkg}"
                for line, pkg in _imported(tree) if pkg in above]
    return bad


@pytest.mark.parametrize("layer", CHECKED)
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
