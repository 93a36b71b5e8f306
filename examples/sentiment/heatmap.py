"""Attention heatmaps of reviews: each review a paragraph of words, a word's background as dark
as its attention weight relative to the largest weight in that review.

Two drawings of one picture: `attention_svg` writes SVG text by hand, so `train.py` draws
runs/<pool>/attention.svg with no plotting library installed (`pip install -e .`);
`draw_attention` draws it with matplotlib, with a colour bar, for the notebooks
(`pip install -e ".[notebooks]"`).
"""

import html

CHAR_WIDTH = 7.2  # px per character of 12px monospace
LINE_HEIGHT = 20
WIDTH = 760


def attention_svg(reviews, title=""):
    """reviews: list of (label_text, tokens, weights) -> SVG text."""
    parts, y = [], 24
    if title:
        parts.append(
            f'<text x="8" y="{y}" font-size="14" font-weight="bold">{html.escape(title)}</text>'
        )
        y += 24
    for label, tokens, weights in reviews:
        parts.append(f'<text x="8" y="{y}" font-size="12" fill="#555">{html.escape(label)}</text>')
        y += LINE_HEIGHT
        peak = max(max(weights), 1e-12)
        x = 8
        for token, weight in zip(tokens, weights):
            width = CHAR_WIDTH * len(token) + 6
            if x + width > WIDTH - 8:
                x, y = 8, y + LINE_HEIGHT
            alpha = weight / peak
            parts.append(
                f'<rect x="{x:.1f}" y="{y - 14}" width="{width:.1f}" height="18" '
                f'fill="#d62728" fill-opacity="{alpha:.3f}"><title>{weight:.4f}</title></rect>'
            )
            parts.append(
                f'<text x="{x + 3:.1f}" y="{y}" font-size="12" '
                f'font-family="monospace">{html.escape(token)}</text>'
            )
            x += width + 2
        y += LINE_HEIGHT * 2
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y}" '
        f'viewBox="0 0 {WIDTH} {y}">\n<rect width="100%" height="100%" fill="white"/>\n'
        + "\n".join(parts)
        + "\n</svg>\n"
    )


def draw_attention(reviews, *, ax=None, title="", cmap="Reds", line_width=88):
    """reviews: list of (label_text, tokens, weights), drawn with matplotlib on ax (a new figure
    when None) as `attention_svg` draws them, with a colour bar; returns the Axes.

    Words are laid out in a monospace font, line_width characters to a line; cmap colours a
    word's weight divided by its review's largest (1 = the review's most looked-at word)."""
    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    from matplotlib.patches import Rectangle

    words, y = [], 0  # (x, y, token, share) in character columns and text lines
    labels = []
    for label, tokens, weights in reviews:
        labels.append((y, label))
        y, x = y + 1, 0
        peak = max(max(weights, default=0.0), 1e-12)
        for token, weight in zip(tokens, weights):
            if x + len(token) > line_width and x > 0:
                x, y = 0, y + 1
            words.append((x, y, token, weight / peak))
            x += len(token) + 1
        y += 1.6
    if ax is None:
        ax = plt.figure(figsize=(line_width * 0.075, 0.22 * y + 0.6)).add_subplot()
    ax.set_xlim(-0.5, line_width + 0.5)
    ax.set_ylim(y - 1.4, -0.8)
    colours = plt.get_cmap(cmap)
    bar = ScalarMappable(cmap=colours)
    bar.set_clim(0, 1)
    ax.figure.colorbar(bar, ax=ax, label="weight / the review's largest", shrink=0.8, fraction=0.03)
    # A font size at which one character of a monospace font is one column wide.
    inches = ax.get_window_extent().width / ax.figure.dpi
    size = 0.95 * inches * 72 / (0.6 * (line_width + 1))
    for top, label in labels:
        ax.text(0, top, label, va="center", fontsize=size, color="#555", style="italic")
    for x, row, token, share in words:
        ax.add_patch(Rectangle((x - 0.3, row - 0.45), len(token) + 0.6, 0.9, color=colours(share)))
        ink = "white" if share > 0.65 else "black"
        ax.text(x, row, token, va="center", family="monospace", fontsize=size, color=ink)
    ax.set_axis_off()
    ax.set_title(title)
    return ax
