"""The course notebooks (notebooks/): each runs top to bottom in a fresh kernel, shrunk for CI
(MINIGRAD_NOTEBOOK_QUICK=1), and an error in any cell fails; the committed files carry their
outputs, stay small, and hold no path of the machine that ran them. Their cells assert their own
numbers (notebook 2 checks each against the chapter's printed value), so running them tests
them."""

import os
import re

import nbformat
import numpy as np
import pytest

from notebooks import course, execute

NOTEBOOKS = execute.NOTEBOOKS
MAX_FILE_BYTES = 500_000
MAX_OUTPUT_BYTES = 150_000
COURSE = [
    "01_autograd_from_scratch.ipynb",
    "02_attention_by_hand.ipynb",
    "03_four_matrices.ipynb",
    "04_imdb.ipynb",
    "05_language_model.ipynb",
    "06_coming_from_pytorch.ipynb",
]


def test_the_six_notebooks_of_the_course_are_there_in_order():
    assert [path.name for path in NOTEBOOKS] == COURSE


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_notebook_runs_top_to_bottom_in_quick_mode(path):
    notebook, _ = execute.execute(path, quick=True, timeout=600)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "a code cell was not run"
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert not errors, errors


def test_notebook_6_skips_its_comparisons_without_torch(tmp_path, monkeypatch):
    """With `import torch` failing, the comparison cells print that they skip; nothing fails."""
    hidden = tmp_path / "torch"
    hidden.mkdir()
    (hidden / "__init__.py").write_text("raise ImportError('torch hidden by the test')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the kernel imports this torch first
    notebook, _ = execute.execute(NOTEBOOKS[5], quick=True, timeout=600)
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "PyTorch is not installed" in printed
    assert printed.count("skipped: PyTorch is not installed") == 2
    assert "minigrad: loss" in printed  # the minigrad half still ran


def _outputs(notebook):
    return [
        (index, output)
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        for output in cell.outputs
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_committed_notebook_has_its_outputs_and_is_small(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), f"{path.name}: saved without running"
    outputs = _outputs(notebook)
    assert len(outputs) >= len(code) // 2, f"{path.name}: saved without its outputs"
    assert not [o for _, o in outputs if o.output_type == "error"], f"{path.name}: saved an error"
    size = path.stat().st_size
    assert size < MAX_FILE_BYTES, f"{path.name} is {size:,} bytes; at most {MAX_FILE_BYTES:,}"
    for index, output in outputs:
        for kind, value in output.get("data", {}).items():
            assert kind != "application/vnd.jupyter.widget-view+json", f"cell {index}: a widget"
            assert not kind.startswith("image/") or kind == "image/svg+xml" or len(value) < 100_000
            assert len(str(value)) < MAX_OUTPUT_BYTES, f"{path.name} cell {index}: {kind} too big"
    text = path.read_text(encoding="utf-8")
    for local in (str(execute.FOLDER.parent), "/root/", "/home/", "/tmp/"):
        assert local not in text, f"{path.name} holds the path {local}"
    assert not re.search(r" at 0x[0-9a-f]{6,}>", text), f"{path.name} holds an object address"


def test_progress_bars_are_saved_in_their_last_state():
    """A tqdm.auto widget's saved text is its first state; execute.py writes its last."""
    bars = []
    for path in NOTEBOOKS:
        for _, output in _outputs(nbformat.read(path, as_version=4)):
            plain = output.get("data", {}).get("text/plain", "")
            if "%|" in plain:
                bars.append(plain)
    assert len(bars) >= 3  # notebooks 3, 4 and 5 train with one
    assert all("100%|" + "\u2588" * 10 + "|" in bar for bar in bars), bars


LINK = re.compile(r"\]\(([^)\s#]+)(#[^)]*)?\)")


def test_links_in_the_notebooks_and_their_readme_name_files():
    pages = [(execute.FOLDER / "README.md").read_text(encoding="utf-8")]
    pages += [
        cell.source
        for path in NOTEBOOKS
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown"
    ]
    targets = {t for page in pages for t, _ in LINK.findall(page) if "://" not in t}
    missing = sorted(t for t in targets if not (execute.FOLDER / t).exists())
    assert not missing, f"links to nothing: {missing}"
    assert "03_four_matrices.ipynb" in targets  # the pattern finds links


# -- the helpers the notebooks share ------------------------------------------------------


def test_heat_map_colours_zero_white_and_the_extremes_full():
    svg = course.heat_maps_svg([("m", np.array([[0.0, 2.0], [-2.0, 1.0]]))], rows=["a", "b"])
    fills = re.findall(r'fill="(#[0-9a-f]{6})"><title>([^<]+)</title>', svg)
    assert fills == [("#ffffff", "0"), ("#b2182b", "2"), ("#2166ac", "-2"), ("#d88c95", "1")]
    assert ">a</text>" in svg and ">b</text>" in svg
    with pytest.raises(ValueError, match="2-D matrices of one shape"):
        course.heat_maps_svg([("x", np.zeros((2, 2))), ("y", np.zeros((3, 2)))])


def test_curve_maps_the_ends_of_each_axis_to_the_plot_corners():
    svg = course.curve_svg({"loss": ([0, 5, 10], [2.0, 1.0, 0.5])}, width=520, height=260)
    (points,) = re.findall(r'<polyline points="([^"]+)"', svg)
    first, middle, last = (tuple(map(float, p.split(","))) for p in points.split())
    assert first == (56.0, 28.0)  # x 0 at the left edge, y 2.0 (the largest) at the top
    assert last == (400.0, 224.0)  # x 10 at the right edge, y 0.5 at the bottom
    assert middle == (228.0, pytest.approx(28.0 + 196.0 * (1.0 / 1.5), abs=0.05))


def test_synthetic_reviews_carry_words_of_their_label_only():
    reviews = course.synthetic_reviews(50, seed=3)
    assert set(reviews) == {"train", "test"} and len(reviews["test"]) == 50
    for text, label in reviews["train"] + reviews["test"]:
        words = set(text.split())
        own = (course.NEGATIVE, course.POSITIVE)[label]
        other = (course.POSITIVE, course.NEGATIVE)[label]
        assert words & set(own) and not words & set(other), (text, label)
    assert {label for _, label in reviews["train"]} == {0, 1}
    assert course.synthetic_reviews(50, seed=3) == reviews


def test_execute_sets_the_quick_setting_for_the_kernel_and_restores_it(tmp_path, monkeypatch):
    monkeypatch.setenv(execute.QUICK_VARIABLE, "as it was")
    notebook = nbformat.v4.new_notebook()
    read = f"import os; print(os.environ[{execute.QUICK_VARIABLE!r}])"
    notebook.cells.append(nbformat.v4.new_code_cell(read))
    path = tmp_path / "probe.ipynb"
    nbformat.write(notebook, path)
    for quick, seen in ((True, "1\n"), (False, "0\n")):
        ran, _ = execute.execute(path, quick=quick)
        assert ran.cells[0].outputs[0]["text"] == seen
        assert os.environ[execute.QUICK_VARIABLE] == "as it was"
