"""Run the course notebooks top to bottom in a fresh kernel and save them with their outputs.

    python notebooks/execute.py                 # all six, full size, outputs saved in place
    python notebooks/execute.py 03 --quick      # one notebook, shrunk for CI, nothing saved

Each notebook runs in its own folder (as Jupyter runs it), so `course.py` and the examples
import. --quick sets MINIGRAD_NOTEBOOK_QUICK=1, which the first cell of every notebook reads
to shrink data and steps. tests/test_notebooks.py calls `execute` the same way.
"""

import argparse
import html
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

FOLDER = Path(__file__).resolve().parent
NOTEBOOKS = sorted(FOLDER.glob("[0-9][0-9]_*.ipynb"))
QUICK_VARIABLE = "MINIGRAD_NOTEBOOK_QUICK"


def execute(path, quick, timeout=900):
    """(the executed notebook, seconds it took). A cell that raises stops the run with
    nbclient's CellExecutionError, which names the cell and the error."""
    notebook = nbformat.read(path, as_version=4)
    previous = os.environ.get(QUICK_VARIABLE)
    os.environ[QUICK_VARIABLE] = "1" if quick else "0"  # the kernel inherits the environment
    try:
        client = NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(Path(path).parent)}},
            record_timing=False,  # no timestamps in the saved file
            store_widget_state=True,  # read back by _bars_as_text, then dropped
        )
        started = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - started
        _bars_as_text(notebook)
        _drop_addresses(notebook)
        return notebook, seconds
    finally:
        if previous is None:
            os.environ.pop(QUICK_VARIABLE, None)
        else:
            os.environ[QUICK_VARIABLE] = previous


def _bars_as_text(notebook):
    """Put each progress bar's last state into its output as text, and drop the widgets.

    A tqdm.auto bar is a widget (an HBox of text, a progress bar, text); the text saved with it
    is its first state ("0%"), and a page that shows the file, as GitHub does, cannot run
    widgets. Jupyter shows the text as well, and a rerun of the cell draws a live bar again."""
    saved = notebook.metadata.pop("widgets", {})
    state = saved.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
            if view is None or view["model_id"] not in state:
                continue
            children = state[view["model_id"]]["state"].get("children", [])
            parts = [state.get(child.removeprefix("IPY_MODEL_"), {}) for child in children]
            if len(parts) != 3:
                continue
            left, bar, right = (part.get("state", {}) for part in parts)
            done = round(10 * bar.get("value", 0) / (bar.get("max") or 1))
            text = html.unescape(left.get("value", "")) + "|" + "\u2588" * done + " " * (10 - done)
            text += "|" + html.unescape(right.get("value", ""))
            output["data"]["text/plain"] = text.replace("\u2007", " ")


def _drop_addresses(notebook):
    """Drop the text "<graphviz.graphs.Digraph at 0x7f...>" beside a picture: its address
    changes at every run, and the picture is what a reader sees."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if len(data) > 1 and ADDRESS.fullmatch(data.get("text/plain", "")):
                del data["text/plain"]


ADDRESS = re.compile(r"<[\w.]+ (object )?at 0x[0-9a-f]+>")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook number prefixes (default: all)")
    parser.add_argument("--quick", action="store_true", help="CI size; the files are not saved")
    args = parser.parse_args(argv)
    chosen = [p for p in NOTEBOOKS if not args.names or p.name[:2] in args.names]
    if not chosen:
        sys.exit(
            f"execute.py: no notebook starts with {args.names}; have {[p.name for p in NOTEBOOKS]}"
        )
    for path in chosen:
        notebook, seconds = execute(path, args.quick)
        if not args.quick:
            nbformat.write(notebook, path)
        size = path.stat().st_size / 1000
        print(f"{path.name}: {seconds:.0f} s{'' if args.quick else f', saved ({size:.0f} kB)'}")


if __name__ == "__main__":
    main()
