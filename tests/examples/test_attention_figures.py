"""The matplotlib drawings of the examples' attention pictures, which the notebooks show:
sentiment/heatmap.py's `draw_attention` (reviews, each word shaded by its weight) and
language_model/attention_grid.py's `draw_attention_grid` (every head of every block). The SVG
the command lines write is tested beside the scripts (test_sentiment_reports.py,
test_language_model.py)."""

import matplotlib
import numpy as np

from examples.language_model.attention_grid import draw_attention_grid
from examples.sentiment.heatmap import draw_attention

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402


def test_draw_attention_shades_each_word_by_its_share_of_the_largest_weight():
    reviews = [("positive review", ["a", "great", "film"], [0.1, 0.6, 0.3]), ("other", ["x"], [1])]
    ax = draw_attention(reviews, title="dot pooling", cmap="Blues")
    words = [t.get_text() for t in ax.texts]
    assert words == ["positive review", "other", "a", "great", "film", "x"]
    cmap = plt.get_cmap("Blues")
    shades = [patch.get_facecolor() for patch in ax.patches]
    expected = [cmap(share) for share in (0.1 / 0.6, 1.0, 0.5, 1.0)]
    np.testing.assert_allclose(shades, expected, atol=1e-6)
    (bar,) = [other for other in ax.figure.axes if other is not ax]
    assert bar.get_ylabel() == "weight / the review's largest" and ax.get_title() == "dot pooling"
    plt.close("all")


def test_draw_attention_wraps_long_reviews_onto_more_lines():
    tokens = ["word"] * 40  # 200 characters: three lines of at most 88
    ax = draw_attention([("review", tokens, [1.0] * 40)])
    rows = sorted({patch.get_y() for patch in ax.patches})
    assert len(rows) == 3
    assert all(patch.get_x() + patch.get_width() <= 88.5 for patch in ax.patches)
    plt.close("all")


def test_draw_attention_grid_draws_every_head_with_the_future_masked():
    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, 5, 5)) * np.tril(np.ones((5, 5)))
    maps = list(weights / weights.sum(axis=-1, keepdims=True))  # 2 blocks of (3 heads, 5, 5)
    figure = draw_attention_grid("ab cd", maps, title="every head")
    panels = [ax for ax in figure.axes if ax.images]
    assert [ax.get_title() for ax in panels] == [
        f"block {b}, head {h}" for b in range(2) for h in range(3)
    ]
    for index, ax in enumerate(panels):
        shown = ax.images[0].get_array()
        assert (
            shown.mask[np.triu_indices(5, k=1)].all() and not shown.mask[np.tril_indices(5)].any()
        )
        np.testing.assert_allclose(shown.filled(0), maps[index // 3][index % 3])
    labels = [t.get_text() for t in panels[0].get_yticklabels()]
    assert labels == ["a", "b", "\u2423", "c", "d"]  # a space drawn as a visible sign
    (bar,) = [ax for ax in figure.axes if not ax.images]
    assert bar.get_ylabel() == "attention weight" and figure.get_suptitle() == "every head"
    plt.close("all")
