"""Attention heatmaps as SVG, written by hand (no plotting library needed).

Each review is a paragraph of words; a word's background is as dark as its attention weight
relative to the largest weight in that review.
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
                f'<text x="{x + 3:.1f}" y="{y}" font-size="12" font-family="monospace">'
                f"{html.escape(token)}</text>"
            )
            x += width + 2
        y += LINE_HEIGHT * 2
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y}" '
        f'viewBox="0 0 {WIDTH} {y}">\n<rect width="100%" height="100%" fill="white"/>\n'
        + "\n".join(parts)
        + "\n</svg>\n"
    )
