"""What the course notebooks share: pictures as SVG (drawn by hand, as the examples' heatmaps
are: no plotting library), a progress bar for notebooks, the source of an example shown in a
cell, and the made-up reviews the IMDB notebook trains on when the real ones are not there.

Every picture is SVG text; a notebook shows it with `IPython.display.SVG(text)`.
"""

import html
import inspect

import numpy as np
from tqdm.auto import tqdm

RED, BLUE = (178, 24, 43), (33, 102, 172)  # the examples' heatmap red, and its opposite


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


def _colour(value, peak):
    """value / peak in [-1, 1] as a colour: white at 0, red towards +1, blue towards -1."""
    share = 0.0 if peak == 0 else max(-1.0, min(1.0, value / peak))
    end = RED if share >= 0 else BLUE
    rgb = (round(255 + (c - 255) * abs(share)) for c in end)
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def heat_maps_svg(panels, rows=None, columns=None, cell=26, numbers=True):
    """panels: [(title, matrix (R, C))], drawn side by side with one colour scale per panel
    (white = 0, red = its largest |value| when positive, blue when negative). rows and columns
    label the entries; numbers writes each value in its square."""
    panels = [(title, np.asarray(matrix, dtype=np.float64)) for title, matrix in panels]
    shapes = {matrix.shape for _, matrix in panels}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ValueError(f"heat_maps_svg: expected 2-D matrices of one shape; got {shapes}")
    (height, width) = shapes.pop()
    label = 8 + 7 * max((len(r) for r in rows), default=0) if rows else 8
    top = 34 + (7 * max(len(c) for c in columns) if columns else 0)
    panel_width = width * cell + 24
    parts = []
    for index, (title, matrix) in enumerate(panels):
        x0 = label + index * panel_width
        peak = float(np.abs(matrix).max())
        parts.append(f'<text x="{x0}" y="16" font-weight="bold">{html.escape(title)}</text>')
        for r in range(height):
            for c in range(width):
                value = float(matrix[r, c])
                x, y = x0 + c * cell, top + r * cell
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                    f'fill="{_colour(value, peak)}"><title>{value:.4g}</title></rect>'
                )
                if numbers:
                    ink = "white" if peak and abs(value) > 0.6 * peak else "#222"
                    parts.append(
                        f'<text x="{x + cell / 2}" y="{y + cell / 2 + 3}" font-size="8" '
                        f'text-anchor="middle" fill="{ink}">{value:.2f}</text>'
                    )
        parts.append(
            f'<rect x="{x0}" y="{top}" width="{width * cell}" height="{height * cell}" '
            'fill="none" stroke="#999" stroke-width="0.5"/>'
        )
        for c, name in enumerate(columns or ()):
            x = x0 + c * cell + cell / 2 + 3
            parts.append(
                f'<text transform="translate({x},{top - 4}) rotate(-90)">{html.escape(name)}</text>'
            )
        if index == 0:
            for r, name in enumerate(rows or ()):
                y = top + r * cell + cell / 2 + 4
                parts.append(
                    f'<text x="{label - 4}" y="{y}" text-anchor="end">{html.escape(name)}</text>'
                )
    return _svg(label + len(panels) * panel_width, top + height * cell + 8, parts)


def curve_svg(series, title="", xlabel="step", ylabel="loss", width=520, height=260):
    """series: {name: (xs, ys)} drawn as lines on shared axes, with the first and last value
    of each axis written at its ends."""
    colours = ("#b2182b", "#2166ac", "#1b7837", "#762a83")
    left, right, top, bottom = 56, 120, 28, 36
    xs_all = np.concatenate([np.asarray(xs, float) for xs, _ in series.values()])
    ys_all = np.concatenate([np.asarray(ys, float) for _, ys in series.values()])
    x_low, x_high = float(xs_all.min()), float(xs_all.max()) or 1.0
    y_low, y_high = float(ys_all.min()), float(ys_all.max())
    y_high = y_high if y_high > y_low else y_low + 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def point(x, y):
        px = left + (x - x_low) / ((x_high - x_low) or 1.0) * plot_w
        return px, top + (y_high - y) / (y_high - y_low) * plot_h

    parts = [
        f'<text x="{left}" y="16" font-weight="bold">{html.escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#999" stroke-width="0.5"/>',
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">{xlabel}</text>',
        f'<text transform="translate(14,{top + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{ylabel}</text>',
        f'<text x="{left}" y="{top + plot_h + 14}" text-anchor="middle">{x_low:g}</text>',
        f'<text x="{left + plot_w}" y="{top + plot_h + 14}" text-anchor="middle">{x_high:g}</text>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{y_high:.3g}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end">{y_low:.3g}</text>',
    ]
    for index, (name, (xs, ys)) in enumerate(series.items()):
        colour = colours[index % len(colours)]
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py in map(point, xs, ys))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}"/>')
        y = top + 12 + 16 * index
        parts.append(
            f'<text x="{left + plot_w + 10}" y="{y}" fill="{colour}">{html.escape(name)}</text>'
        )
    return _svg(width, height, parts)


def _svg(width, height, parts):
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="11">\n'
        '<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(parts) + "\n</svg>\n"
    )


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
