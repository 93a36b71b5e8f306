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


ENGINE = ["minigrad.engine"]
FLOORS = [  # files -> what of minigrad/nn they may import
    ("minigrad/kernels/**/*.py", ["minigrad.kernels"]),
    ("minigrad/errors.py", []),
    ("minigrad/random.py", []),
    ("minigrad/dtypes.py", ["minigrad.errors"]),
    ("minigrad/engine/grad_mode.py", []),
    ("minigrad/engine/versions.py", []),
    ("minigrad/engine/views.py", []),
    ("minigrad/engine/grad_sinks.py", []),
    ("minigrad/engine/walk.py", ["minigrad.engine.grad_sinks"]),
    ("minigrad/engine/inference.py", ["minigrad.engine.grad_mode"]),
    ("minigrad/engine/*.py", ["minigrad.engine", "minigrad.dtypes", "minigrad.errors"]),
    ("minigrad/autograd.py", ["minigrad.engine", "minigrad.errors"]),
    ("minigrad/ops/**/*.py", ["minigrad.ops", "minigrad.autograd", "minigrad.dtypes"]),
    ("minigrad/ops/**/*.py", ["minigrad.errors", "minigrad.kernels", "minigrad.random", *ENGINE]),
]


@pytest.mark.parametrize("pattern, may_import", FLOORS, ids=[f for f, _ in FLOORS])
def test_each_floor_imports_only_the_floors_below(pattern, may_import):
    other_rows = [row for p, row in FLOORS if p == pattern and row is not may_import]
    problems = []
    for path in files(pattern):
        for name in imports_of(path):
            if not any(allowed(name, row) for row in [may_import, *other_rows]):
                problems.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not problems, "\n".join(problems)


def test_the_engines_imports_run_one_way():
    """No file of minigrad/engine/ reaches itself through imports, even through an import
    inside a function (a circle a reader has to untangle)."""
    modules = {
        "minigrad.engine." + path.stem: {
            name.rsplit(".", 1)[0] if name.count(".") > 2 else name
            for name in imports_of(path)
            if name.startswith("minigrad.engine.")
        }
        for path in files("minigrad/engine/*.py")
        if path.stem != "__init__"
    }

    def reaches(start, target, seen):
        for name in modules.get(start, ()):
            if name == target or (name not in seen and reaches(name, target, seen | {name})):
                return True
        return False

    assert [m for m in modules if reaches(m, m, {m})] == []


def test_the_viz_imports_run_one_way():
    """No file of minigrad/viz/ reaches itself through imports, imports inside functions
    included (the drawing and the replay were once two top-level files importing each other).
    A name of the package itself (`from minigrad import viz`, `from . import draw`) is an
    import of its __init__.py."""
    submodules = {path.stem for path in files("minigrad/viz/*.py")} - {"__init__"}

    def module_of(name):
        """The file of minigrad/viz/ an imported name comes from; None: outside the package."""
        parts = name.split(".")
        if parts[:2] != ["minigrad", "viz"]:
            return None
        return "minigrad.viz" + (f".{parts[2]}" if parts[2:3] and parts[2] in submodules else "")

    modules = {
        "minigrad.viz" + ("" if path.stem == "__init__" else f".{path.stem}"): {
            module_of(name) for name in imports_of(path)
        }
        - {None}
        for path in files("minigrad/viz/*.py")
    }

    def reaches(start, target, seen):
        for name in modules.get(start, ()):
            if name == target or (name not in seen and reaches(name, target, seen | {name})):
                return True
        return False

    assert "minigrad.viz.drawing" in modules["minigrad.viz.replaying"]  # the imports were read
    assert [m for m in modules if reaches(m, m, {m})] == []


def test_the_engine_never_imports_the_layers():
    problems = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in files("minigrad/**/*.py")
        for n in imports_of(p)
        if n.split(".")[0] == "nn" or allowed(n, ["minigrad.nn"])
    ]
    assert not problems, "\n".join(problems)


def test_layers_use_no_kernels_directly():
    problems = [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in files("nn/*.py")
        for n in imports_of(p)
        if allowed(n, ["minigrad.kernels"])
    ]
    assert not problems, "\n".join(problems)


def test_layers_define_no_functions_of_their_own():
    """Custom Functions live in minigrad/ops/; nn/ holds Modules built on the public API."""
    problems = []
    for path in files("nn/*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", getattr(b, "attr", "")) == "Function" for b in node.bases
            ):
                problems.append(f"{path.relative_to(ROOT)}: class {node.name}(Function)")
    assert not problems, "\n".join(problems)


def run_python(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_importing_minigrad_loads_no_layer_and_mg_nn_is_nn():
    out = run_python(
        "import sys, minigrad as mg; print('minigrad.nn' in sys.modules); "
        "from minigrad import nn; import minigrad.nn.functional as F; "
        "print(nn is mg.nn is sys.modules['minigrad.nn'], F is nn.functional, 'nn' in sys.modules)"
    )
    assert out.split() == ["False", "True", "True", "False"]


def test_a_students_own_nn_py_does_not_shadow_minigrad_nn(tmp_path):
    """In a course folder holding its own nn.py (and an nn/ package), minigrad's nn is still
    minigrad's."""
    (tmp_path / "nn.py").write_text("raise SystemExit('the student nn.py was imported')\n")
    (tmp_path / "nn_pkg").mkdir()
    script = (
        "import sys\n"
        "from minigrad import nn\n"
        "import minigrad.nn.functional as F\n"
        "from minigrad.nn import LSTM\n"
        "import minigrad\n"
        "print(nn.__name__, F.__name__, LSTM.__module__, nn.Linear(2, 3).weight.shape)\n"
        "print('nn' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    first, second = result.stdout.strip().splitlines()
    names, lstm_module, shape = first.rsplit(" ", 3)[0], first.split()[2], first.split(" ", 3)[3]
    assert names == "minigrad.nn minigrad.nn.functional" and lstm_module.startswith("minigrad.nn.")
    assert shape == "(3, 2)"
    assert second == "False"


def test_the_package_list_names_every_package_folder():
    """pyproject.toml lists the packages by hand (nn/ installs as minigrad.nn): none may be left
    out."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {"minigrad": ROOT / "minigrad", "minigrad.nn": ROOT / "nn"}
    found = set()
    for package, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            found.add(".".join([package, *init.parent.relative_to(folder).parts]))
    assert set(config["packages"]) == found
    assert config["package-dir"] == {"minigrad": "minigrad", "minigrad.nn": "nn"}


def test_star_import_does_not_shadow_builtins_or_export_numpy():
    namespace = {}
    exec("from minigrad import *", namespace)
    for name in ("sum", "max", "min", "abs", "bool", "all", "any", "round", "pow", "np", "numpy"):
        assert name not in namespace, name
    assert {"tensor", "Tensor", "no_grad", "nn"} <= set(namespace)
    import minigrad as mg

    missing = [name for name in mg.__all__ if not hasattr(mg, name)]
    assert not missing


def _ops_index():
    """{file or package of minigrad/ops: the names its line of the ops/__init__.py index lists}."""
    import minigrad.ops

    index, entry = {}, None
    for line in minigrad.ops.__doc__.split("\n"):
        words = line.split()
        if line.startswith("    ") and words and words[0].endswith((".py", "/")):
            entry = words[0]
            index[entry] = words[1:]
        elif line.startswith("        ") and entry:  # a continued line
            index[entry] += words
        else:
            entry = None
    return index


def test_the_ops_index_lists_every_family_file_and_only_names_that_exist():
    import importlib

    from minigrad.engine import Tensor

    index = _ops_index()
    folder = ROOT / "minigrad" / "ops"
    files = {p.name for p in folder.glob("*.py")} - {
        "__init__.py",
        "args.py",
        "registry.py",
        "namespace.py",
    }
    files |= {p.name + "/" for p in folder.iterdir() if (p / "__init__.py").exists()}
    assert set(index) == files, "ops/__init__.py's index and the files of minigrad/ops differ"
    wrong = []
    for entry, names in index.items():
        module = importlib.import_module("minigrad.ops." + entry.removesuffix(".py").rstrip("/"))
        for name in names:
            if name == "...":
                continue
            if not (hasattr(module, name) or (name.endswith("_") and hasattr(Tensor, name))):
                wrong.append(f"{entry} {name}")
    assert not wrong, "listed but not defined there: " + ", ".join(wrong)
    from minigrad.ops import registry

    for name, entry in registry.OPS.items():
        family_file = entry.family.split(".")[0] + ("/" if "." in entry.family else ".py")
        assert family_file in index, f"{name}: its family {entry.family} is not in the index"


def test_tests_import_torch_only_through_importorskip():
    """PyTorch is optional: the README's test command runs without it, the comparisons skipped.
    A test file with a top-level `import torch` (before a pytest.importorskip("torch"), which
    skips the rest of the file) would stop the whole collection instead."""
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:  # module level only: inside a test is fine
            if "importorskip('torch'" in ast.unparse(node):  # unparse writes ' quotes
                break
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(name == "torch" or name.startswith("torch.") for name in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def _unmirrored(folder, pattern):
    """The files of folder (matching pattern; not __init__.py nor a _private.py) that have no test
    file of the same place below tests/ (minigrad/ops/losses/margin.py ->
    tests/ops/losses/test_margin.py, nn/rnn_cell.py -> tests/nn/test_rnn_cell.py)."""
    package = ROOT / folder
    tests = ROOT / "tests" / package.relative_to(ROOT / ("minigrad" if folder != "nn" else ""))
    missing = []
    for path in sorted(package.glob(pattern)):
        if path.name.startswith("_"):
            continue
        test = tests / path.parent.relative_to(package) / f"test_{path.name}"
        if not test.exists():
            missing.append(f"{path.relative_to(ROOT)} has no {test.relative_to(ROOT)}")
    return missing


@pytest.mark.parametrize("folder, pattern", [("minigrad/ops", "**/*.py"), ("nn", "*.py")])
def test_every_op_family_and_layer_file_has_its_mirrored_test_file(folder, pattern):
    """Tests mirror the package (STYLE.md): the test of minigrad/ops/x.py is tests/ops/test_x.py,
    of nn/x.py tests/nn/test_x.py."""
    missing = _unmirrored(folder, pattern)
    assert not missing, "\n".join(missing)
