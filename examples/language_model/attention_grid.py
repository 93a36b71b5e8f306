"""The attention weights of every head of every block for one prompt, as a grid of heat maps
(SVG written by hand, no plotting library).

Row b, column h is block b's head h: a T x T matrix whose row t is how much the character at
position t attends to each position 0..t. In a causal model everything above the diagonal is
exactly 0, so each map is a lower triangle: the mask made visible in a trained model.
"""

import html

import numpy as np

import minigrad as mg

CELL = 9  # px per matrix entry
GAP = 26  # px between maps
LABEL = 14  # px of axis labels


@mg.no_grad()
def attention_maps(model, vocabulary, prompt):
    """(characters, [per block: (heads, T, T) numpy weights]) for the prompt (cut to the
    context)."""
    ids = vocabulary.encode(prompt)[-model.context :]
    was_training = model.training
    model.eval()
    model(np.array([ids]))
    model.train(was_training)
    return vocabulary.decode(ids), [weights[0] for weights in model.attention_weights()]


def attention_grid_svg(characters, maps, title=""):
    """characters: the prompt (T); maps: per block a (heads, T, T) array -> SVG text. Each entry
    is a square whose darkness is its weight (1 = black red); the upper triangle is left white."""
    steps = len(characters)
    heads = maps[0].shape[0]
    size = steps * CELL
    left, top = LABEL + 24, 40 if title else 16
    width = left + heads * (size + GAP)
    height = top + len(maps) * (size + GAP + LABEL)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="9">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<defs><rect id="c" width="{CELL}" height="{CELL}" fill="#b2182b"/></defs>',
    ]
    if title:
        parts.append(
            f'<text x="8" y="20" font-size="13" font-family="sans-serif" font-weight="bold">'
            f"{html.escape(title)}</text>"
        )
    shown = [
        html.escape(c if c.strip() else "\u2423") for c in characters
    ]  # a space as a visible sign
    for block, weights in enumerate(maps):
        y0 = top + block * (size + GAP + LABEL) + LABEL
        parts.append(
            f'<text transform="translate(14,{y0 + size / 2:.0f}) rotate(-90)" text-anchor="middle" '
            f'font-size="11" font-family="sans-serif">block {block}</text>'
        )
        for head in range(heads):
            x0 = left + head * (size + GAP)
            if block == 0:
                parts.append(
                    f'<text x="{x0}" y="{y0 - 4}" font-size="11" font-family="sans-serif">head '
                    f"{head}</text>"
                )
            parts.append(f'<g transform="translate({x0},{y0})">')
            parts.append(
                f'<rect width="{size}" height="{size}" fill="none" stroke="#999" '
                'stroke-width="0.5"/>'
            )
            for query in range(steps):
                for key in range(query + 1):
                    weight = float(weights[head, query, key])
                    if weight >= 0.005:
                        parts.append(
                            f'<use href="#c" x="{key * CELL}" y="{query * CELL}" '
                            f'fill-opacity="{min(weight, 1):.2f}"/>'
                        )
            if head == 0:  # the characters down the side: the queries
                parts += [
                    f'<text x="-8" y="{query * CELL + CELL - 1}" '
                    f'text-anchor="middle">{shown[query]}</text>'
                    for query in range(steps)
                ]
            parts += [
                f'<text x="{key * CELL + CELL / 2:.1f}" y="{size + 9}" '
                f'text-anchor="middle">{shown[key]}</text>'
                for key in range(steps)
            ]  # along the bottom: the keys
            parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
