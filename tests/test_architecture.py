"""The floors of docs/ARCHITECTURE.md: imports flow one way, the engine does not load the layers,
and `from minigrad import *` does not shadow Python's builtins."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def imports_of(path):
    """Absolute module names imported by a file (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # from . import x
                    names.update(f"{module}.{alias.name}" for alias in node.names)
                    continue
            else:
                module = node.module
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return {n for n in names if n.split(".")[0] in ("minigrad", "nn")}


def files(pattern):
    return sorted(ROOT.glob(pattern))


def allowed(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


FLOORS = [  # files -> what of minigrad/nn they may import
    ("minigrad/kernels/*.py", ["minigrad.kernels"]),
    ("minigrad/errors.py", []),
    ("minigrad/random.py", []),
    ("minigrad/dtypes.py", ["minigrad.errors"]),
    ("minigrad/autograd.py", ["minigrad.errors"]),
    ("minigrad/tensor.py", ["minigrad.autograd", "minigrad.dtypes", "minigrad.errors"]),
    ("minigrad/ops/*.py", ["minigrad.ops", "minigrad.tensor", "minigrad.autograd", "minigrad.dtypes",
                           "minigrad.errors", "minigrad.kernels", "minigrad.random"]),
]


@pytest.mark.parametrize("pattern, may_import", FLOORS, ids=[f for f, _ in FLOORS])
def test_each_floor_imports_only_the_floors_below(pattern, may_import):
    problems = []
    for path in files(pattern):
        for name in imports_of(path):
            if not allowed(name, may_import):
                problems.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not problems, "\n".join(problems)


def test_the_engine_never_imports_the_layers():
    problems = [f"{p.relative_to(ROOT)} imports {n}" for p in files("minigrad/**/*.py")
                for n in imports_of(p) if n == "nn" or n.startswith("nn.")]
    assert not problems, "\n".join(problems)


def test_layers_use_no_kernels_directly():
    problems = [f"{p.relative_to(ROOT)} imports {n}" for p in files("nn/*.py")
                for n in imports_of(p) if allowed(n, ["minigrad.kernels"])]
    assert not problems, "\n".join(problems)


def test_layers_define_no_functions_of_their_own():
    """Custom Functions live in minigrad/ops/; nn/ holds Modules built on the public API."""
    problems = []
    for path in files("nn/*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == "Function"
                                                      for b in node.bases):
                problems.append(f"{path.relative_to(ROOT)}: class {node.name}(Function)")
    assert not problems, "\n".join(problems)


def run_python(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_importing_minigrad_loads_no_layer_and_mg_nn_is_nn():
    out = run_python("import sys, minigrad as mg; print('nn' in sys.modules); "
                     "from minigrad import nn; import nn as top; print(nn is top is mg.nn)")
    assert out.split() == ["False", "True"]


def test_star_import_does_not_shadow_builtins_or_export_numpy():
    namespace = {}
    exec("from minigrad import *", namespace)
    for name in ("sum", "max", "min", "abs", "bool", "all", "any", "round", "pow", "np", "numpy"):
        assert name not in namespace, name
    assert {"tensor", "Tensor", "no_grad", "nn"} <= set(namespace)
    import minigrad as mg
    missing = [name for name in mg.__all__ if not hasattr(mg, name)]
    assert not missing
