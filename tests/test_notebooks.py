"""The course notebooks (notebooks/): each runs top to bottom in a fresh kernel, shrunk for CI
(MINIGRAD_NOTEBOOK_QUICK=1), and an error in any cell fails; every cell that draws a figure
(`plt.show()`) shows one, in the run and in the committed file; the committed files carry their
outputs, stay small, and hold no path of the machine that ran them. Notebook 2 compares its
numbers with the chapter's in one check cell (which fails when they differ), and still runs with
other inputs in its first cell."""

import os
import re

import matplotlib
import nbformat
import numpy as np
import pytest

matplotlib.use("Agg")  # the helpers' tests draw without a screen

from notebooks import course, execute

NOTEBOOKS = execute.NOTEBOOKS
MAX_FILE_BYTES = 500_000
MAX_OUTPUT_BYTES = 150_000
# fmt: off
COURSE = [
    "01_autograd_from_scratch.ipynb", "02_attention_by_hand.ipynb", "03_four_matrices.ipynb",
    "04_imdb.ipynb", "05_language_model.ipynb", "06_coming_from_pytorch.ipynb",
]
# fmt: on


def test_the_six_notebooks_of_the_course_are_there_in_order():
    assert [path.name for path in NOTEBOOKS] == COURSE


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_notebook_runs_top_to_bottom_in_quick_mode(path):
    notebook, _ = execute.execute(path, quick=True, timeout=600)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "a code cell was not run"
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert not errors, errors
    assert_figures_drawn(notebook, path.name)


def assert_figures_drawn(notebook, name):
    """Every cell that calls plt.show() has a PNG among its outputs; notebooks 1 to 5 draw."""
    drawing = [cell for cell in notebook.cells if "plt.show()" in cell.source]
    for cell in drawing:
        kinds = {kind for output in cell.outputs for kind in output.get("data", {})}
        assert "image/png" in kinds, f"{name}: no figure from the cell {cell.source[:80]!r}"
    if not name.startswith("06"):
        assert drawing, f"{name} draws no figure"


def test_notebook_2_runs_with_other_inputs_in_its_first_cell(tmp_path):
    """A student changes the query (W_Q) in the first cell: every cell runs, the numbers follow,
    and the check cell says the chapter's numbers no longer apply instead of failing."""
    notebook = nbformat.read(NOTEBOOKS[1], as_version=4)
    first = next(cell for cell in notebook.cells if cell.cell_type == "code")
    chapter_query = "QUERY_WEIGHT = [[0, 1], [2, -1]]"
    assert chapter_query in first.source
    first.source = first.source.replace(chapter_query, "QUERY_WEIGHT = [[1, 0], [0, 2]]")
    # The notebook's folder as a copy: notebooks/ with course.py, the examples beside it.
    (tmp_path / "examples").symlink_to(execute.FOLDER.parent / "examples")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "course.py").write_text((execute.FOLDER / "course.py").read_text())
    edited = tmp_path / "notebooks" / NOTEBOOKS[1].name
    nbformat.write(notebook, edited)
    ran, _ = execute.execute(edited, quick=True, timeout=600)
    printed = "".join(
        output.get("text", "")
        for cell in ran.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert not [o for c in ran.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert "q_it = [1. 2.]" in printed  # x_it W_Q = [1, 1] [[1, 0], [0, 2]]: the new query
    assert "are not the chapter's" in printed and "numbers are the chapter's" not in printed
    assert_figures_drawn(ran, edited.name)


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
    assert_figures_drawn(notebook, path.name)
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


def test_heat_map_centres_a_signed_matrix_on_white_and_labels_it():
    ax = course.heat_map(
        np.array([[0.0, 2.0], [-2.0, 1.0]]),
        ["a", "b"],
        ["c", "d"],
        title="m",
        xlabel="key",
        colour_label="weight",
    )
    (image,) = ax.images
    assert image.get_clim() == (-2.0, 2.0) and image.get_cmap().name == "RdBu_r"
    assert np.allclose(image.cmap(image.norm(0.0))[:3], 0.97, atol=0.03)  # 0 is (near) white
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert ax.get_title() == "m" and ax.get_xlabel() == "key"
    assert [t.get_text() for t in ax.texts] == ["0.00", "2.00", "-2.00", "1.00"]
    (bar,) = [other for other in ax.figure.axes if other is not ax]  # the colour bar
    assert bar.get_ylabel() == "weight"
    weights = course.heat_map(np.array([[0.25, 0.75]]), numbers=False, colorbar=False, vmax=1)
    assert (
        weights.images[0].get_clim() == (0.0, 1.0) and weights.images[0].get_cmap().name == "Reds"
    )
    assert len(weights.figure.axes) == 1 and not weights.texts
    with pytest.raises(ValueError, match="2-D matrix"):
        course.heat_map(np.zeros(3))


def test_figure_helpers_draw_on_the_axes_they_are_given():
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2)
    assert course.heat_map(np.eye(2), ax=left, cmap="viridis") is left
    assert left.images[0].get_cmap().name == "viridis"
    drawn = course.curve(
        {"train": ([0, 1, 2], [2.0, 1.0, 0.5]), "dev": ([0, 2], [2.1, 0.7])},
        ax=right,
        title="loss",
        linewidth=3,
    )
    assert drawn is right and [line.get_label() for line in right.lines] == ["train", "dev"]
    assert right.lines[0].get_linewidth() == 3 and right.get_legend() is not None
    assert list(right.lines[0].get_ydata()) == [2.0, 1.0, 0.5]
    plt.close("all")


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
