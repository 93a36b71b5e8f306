"""lstm_embedded(lstm, embedding, ids): an nn.LSTM over an nn.Embedding's vectors of ids, the
numbers of lstm(embedding(ids)) made faster. The sentiment example's encoder
(examples/sentiment/model.py) runs it; benchmarks/README.md measures what it saves.

The first layer's input projection embedding(ids) @ weight_ih.T is computed once per distinct id
and not once per position (a batch of 128 IMDB reviews has ~24,000 tokens but ~4,700 distinct
ones); its backward adds the positions' gradients into those rows, as an embedding's backward
does (minigrad/ops/lstm.py, `lstm_layer` with `rows`).
"""

import numpy as np

import minigrad as mg
from minigrad import autograd
from minigrad.errors import ShapeError
from minigrad.onnx.exporting import is_exporting

from .embedding import Embedding
from .rnn import LSTM, _refuse_lengths_as_state


def lstm_embedded(lstm, embedding, ids, hx=None, *, lengths=None):
    """lstm(embedding(ids), hx, lengths=lengths), the same numbers up to float rounding.

    Args:
        lstm: an nn.LSTM.
        embedding: an nn.Embedding with embedding_dim = lstm.input_size (its padding_idx and
            max_norm apply as in embedding(ids)).
        ids: integers (a Tensor, an array or a list), (B, T) if lstm.batch_first else (T, B).
        hx, lengths: as lstm.forward's.

    Returns (output, (h_n, c_n)) as lstm.forward does.

    Example::

        embedding, lstm = nn.Embedding(100, 8), nn.LSTM(8, 16, batch_first=True)
        ids = [[4, 7, 7, 2, 9], [4, 1, 3, 0, 0]]  # two reviews, the second padded with 0
        output, (h_n, c_n) = nn.lstm_embedded(lstm, embedding, ids, lengths=[5, 3])
    """
    if not isinstance(lstm, LSTM):
        raise TypeError(f"lstm_embedded: expected an nn.LSTM; got {type(lstm).__name__}")
    _refuse_lengths_as_state(lstm, hx)
    if is_exporting():  # minigrad.onnx writes the two layers, not this run's distinct ids
        return lstm(embedding(ids), hx, lengths=lengths)
    if not isinstance(embedding, Embedding) or embedding.embedding_dim != lstm.input_size:
        raise TypeError(
            f"lstm_embedded: expected an nn.Embedding with embedding_dim={lstm.input_size} "
            f"(the LSTM's input_size); got {embedding!r}"
        )
    ids = np.asarray(ids._data if isinstance(ids, mg.Tensor) else ids)
    layout = "(batch, time)" if lstm.batch_first else "(time, batch)"
    if ids.ndim != 2 or ids.dtype.kind not in "iu" or 0 in ids.shape:
        raise ShapeError(
            f"lstm_embedded: expected integer ids of shape {layout}, at least one of each; "
            f"got shape {ids.shape}, dtype {ids.dtype}"
        )
    distinct, rows = np.unique(ids, return_inverse=True)
    table = embedding(mg.tensor(distinct))  # (R, input_size): each distinct id's vector
    shaped = np.broadcast_to(np.empty((), table.dtype), ids.shape + (lstm.input_size,))
    with autograd.module_scope(lstm):  # mg.viz draws the layers inside the LSTM
        return lstm._layers(table, rows.reshape(ids.shape), shaped, hx, lengths)


__all__ = ["lstm_embedded"]
