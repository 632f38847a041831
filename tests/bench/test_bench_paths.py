"""Benchmarks run from the repository root as bench/README.md says (``python bench/X.py``,
no PYTHONPATH): every script that imports the project's packages at module level puts the
repository root on ``sys.path`` first (issue 36: several failed with "No module named bench")."""
import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = {"bench", "sim", "models", "deploy", "hw_profiles", "neuroedge"}
BOOTSTRAP = "sys.path.insert(0, str(Path(__file__).resolve().parents[1]))"


def _module_level_project_imports(tree: ast.Module) -> list[int]:
    """Line numbers of the module-level imports of the project's own packages."""
    lines = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n.split(".")[0] in PROJECT for n in names):
            lines.append(node.lineno)
    return lines


def test_every_bench_script_puts_the_root_first_before_project_imports():
    scripts = sorted(p for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))
    assert len(scripts) > 20        # the glob found the scripts (34 at the time of writing)
    missing = []
    for path in scripts:
        text = path.read_text()
        imports = _module_level_project_imports(ast.parse(text))
        if not imports:
            continue                # nothing of the project's at module level: nothing to find
        boot = next((i + 1 for i, line in enumerate(text.splitlines())
                     if line.strip() == BOOTSTRAP), None)
        if boot is None or boot > min(imports):
            missing.append(path.name)
    assert missing == []


def test_a_bench_script_that_imports_bench_runs_without_pythonpath():
    # bep_tt_damage.py imports bench._checks and sim at module level; --help stops after the
    # imports. Run from the repository root with PYTHONPATH removed, as a user would.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "bench/bep_tt_damage.py", "--help"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage:" in out.stdout
