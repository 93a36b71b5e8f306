"""What the course notebooks share: figures drawn with matplotlib (a heat map with its colour
bar, curves on shared axes), a progress bar for notebooks, the source of an example shown in a
cell, and the made-up reviews the IMDB notebook trains on when the real ones are not there.

Every figure function draws on `ax` when given one (a student's own subplot, styled as they
like) and on a new figure otherwise, takes matplotlib's own style arguments (`cmap`, `color`,
...), and returns the Axes. In a notebook the figure shows inline at the end of the cell.
"""

import inspect

import numpy as np
from tqdm.auto import tqdm


def progress(iterable=None, **options):
    """`tqdm.auto.tqdm` (a widget in Jupyter, text elsewhere) without the clock: a saved
    notebook then shows the same bar at every run."""
    options.setdefault(
        "bar_format", "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{postfix}"
    )
    return tqdm(iterable, **options)


def source(obj):
    """The source of a function or class as a Markdown code block, to display in a cell."""
    from IPython.display import Markdown

    return Markdown(f"```python\n{inspect.getsource(obj).rstrip()}\n```")


def axes(ax=None, size=(4.5, 3.5)):
    """ax itself, or the Axes of a new figure of `size` inches."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.figure(figsize=size).add_subplot()


def heat_map(
    matrix,
    rows=None,
    columns=None,
    *,
    ax=None,
    title="",
    xlabel="",
    ylabel="",
    colour_label="",
    numbers=True,
    number_format=".2f",
    colorbar=True,
    cmap=None,
    vmin=None,
    vmax=None,
    **style,
):
    """Draw matrix (R, C) as coloured squares with a colour bar; returns the Axes.

    A matrix with negative entries is drawn on a diverging scale centred on 0 (blue below,
    white at 0, red above, `RdBu_r`, limits +-its largest |value|); one without, on `Reds` from
    0 to its largest value (pass vmin=0, vmax=1 for weights that are shares). rows and columns
    label the entries; numbers writes each value in its square (as `number_format` says); the
    rest goes to `imshow`.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"heat_map: expected a 2-D matrix; got shape {matrix.shape}")
    ax = axes(ax, size=(1.2 + 0.55 * matrix.shape[1], 0.9 + 0.5 * matrix.shape[0]))
    peak = float(np.nanmax(np.abs(matrix))) if matrix.size else 0.0
    peak = peak or 1.0
    signed = bool((matrix < 0).any())
    if cmap is None:
        cmap = "RdBu_r" if signed else "Reds"
    if vmin is None:
        vmin = -peak if signed else 0.0
    if vmax is None:
        vmax = peak
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, **style)
    ax.set_xticks(range(matrix.shape[1]), columns if columns is not None else None)
    ax.set_yticks(range(matrix.shape[0]), rows if rows is not None else None)
    if columns is not None and max((len(str(c)) for c in columns), default=0) > 3:
        ax.tick_params(axis="x", labelrotation=45)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if numbers:
        for (r, c), value in np.ndenumerate(matrix):
            shade = image.norm(value)
            ink = "white" if shade > 0.65 or (signed and shade < 0.35) else "#222"
            text = format(value, number_format)
            ax.text(c, r, text, ha="center", va="center", fontsize=8, color=ink)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label=colour_label, shrink=0.9)
    return ax


def curve(series, *, ax=None, title="", xlabel="step", ylabel="loss", **style):
    """series: {name: (xs, ys)} drawn as lines on shared axes with a legend; returns the Axes.
    style goes to every `plot` (linewidth=1, marker="." ...)."""
    ax = axes(ax, size=(6, 3))
    for name, (xs, ys) in series.items():
        ax.plot(xs, ys, label=name, **style)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    if len(series) > 1:
        ax.legend()
    return ax


# -- made-up reviews, for the IMDB notebook when the real ones are not there ---------------

POSITIVE = ("great", "awesome", "wonderful", "brilliant", "loved")
NEGATIVE = ("boring", "awful", "terrible", "dull", "hated")
NEUTRAL = (
    "this science fiction film is really a the movie story plot acting cast and was it "
    "of with its by an scene ending music director who"
).split()


def synthetic_reviews(count, seed=0):
    """{"train": [(text, label)], "test": [...]} as `examples.sentiment.data.load_imdb` returns,
    `count` reviews per split: 8 to 40 neutral words with one to three words of one sentiment
    (label 1 positive, 0 negative) among them. A word tells the label; most words do not."""
    rng = np.random.default_rng(seed)
    splits = {}
    for split in ("train", "test"):
        pairs = []
        for _ in range(count):
            label = int(rng.integers(2))
            words = list(rng.choice(NEUTRAL, size=int(rng.integers(8, 41))))
            for _ in range(int(rng.integers(1, 4))):
                words.insert(
                    int(rng.integers(len(words) + 1)), rng.choice((NEGATIVE, POSITIVE)[label])
                )
            pairs.append((" ".join(str(word) for word in words), label))
        splits[split] = pairs
    return splits
