"""The attention weights of every head of every block for one prompt, as a grid of heat maps.

Row b, column h is block b's head h: a T x T matrix whose row t is how much the character at
position t attends to each position 0..t. In a causal model everything above the diagonal is
exactly 0, so each map is a lower triangle: the mask made visible in a trained model.

Two drawings of one picture: `attention_grid_svg` writes SVG text by hand, so `train.py` draws
out/attention.svg with no plotting library installed (`pip install -e .`); `draw_attention_grid`
draws it with matplotlib, with a colour bar, for the notebooks (`pip install -e ".[notebooks]"`).
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
            '<text x="8" y="20" font-size="13" font-family="sans-serif" '
            f'font-weight="bold">{html.escape(title)}</text>'
        )
    # a space as a visible sign
    shown = [html.escape(c if c.strip() else "\u2423") for c in characters]
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


def draw_attention_grid(characters, maps, *, figure=None, title="", cmap="Reds"):
    """characters: the prompt (T); maps: per block a (heads, T, T) array, drawn with matplotlib
    as `attention_grid_svg` draws them: row b, column h is block b's head h, the character
    asking down the side, the character looked at along the bottom, the upper triangle (masked)
    grey, one colour bar for all (weight 0 to 1). Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    blocks, heads = len(maps), maps[0].shape[0]
    if figure is None:
        figure = plt.figure(figsize=(0.5 + 2.6 * heads, 0.6 + 2.5 * blocks), layout="constrained")
    grid = figure.subplots(blocks, heads, squeeze=False, sharex=True, sharey=True)
    shown = [c if c.strip() else "\u2423" for c in characters]  # a space as a visible sign
    steps = len(characters)
    future = np.triu(np.ones((steps, steps), dtype=bool), k=1)
    colours = plt.get_cmap(cmap).with_extremes(bad="#eeeeee")  # grey: masked, white: weight 0
    for block, weights in enumerate(maps):
        for head in range(heads):
            ax = grid[block, head]
            masked = np.ma.masked_array(weights[head], mask=future)
            image = ax.imshow(masked, cmap=colours, vmin=0.0, vmax=1.0)
            ax.set_title(f"block {block}, head {head}", fontsize=9)
            ax.set_xticks(range(steps), shown, fontsize=6, family="monospace")
            ax.set_yticks(range(steps), shown, fontsize=6, family="monospace")
            ax.tick_params(length=0)
        grid[block, 0].set_ylabel("character asking")
    for ax in grid[-1]:
        ax.set_xlabel("character looked at")
    figure.colorbar(image, ax=grid, label="attention weight", shrink=0.8)
    if title:
        figure.suptitle(title)
    return figure
