"""minigrad.onnx.export (minigrad/onnx/): each model written, checked by onnx.checker and run in
onnxruntime, whose outputs must equal minigrad's (float32, rtol 1e-5) on the traced inputs and
on inputs of another batch size and sequence length where those axes are declared dynamic."""

import io

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-5, 2e-6


def run_onnx(data, feeds):
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {name: value.numpy() for name, value in feeds.items()})


def assert_exports(model, runs, names, dynamic_axes, output_names=None, atol=ATOL):
    """Export model on runs[0]; every run (a tuple of inputs) gives minigrad's outputs in
    onnxruntime. Returns the ModelProto."""
    buffer = io.BytesIO()
    made = mg.onnx.export(
        model, runs[0], buffer, input_names=names, output_names=output_names,
        dynamic_axes=dynamic_axes,
    )  # fmt: skip
    onnx.checker.check_model(onnx.load_from_string(buffer.getvalue()))
    model.eval()
    for inputs in runs:
        with mg.no_grad():
            expected = model(*inputs)
        expected = [t.numpy() for t in mg.onnx.exporting.flatten(expected)] if not isinstance(
            expected, mg.Tensor) else [expected.numpy()]  # fmt: skip
        got = run_onnx(buffer.getvalue(), dict(zip(names, inputs)))
        assert len(got) == len(expected)
        for ours, theirs in zip(expected, got):
            assert theirs.shape == ours.shape and theirs.dtype == ours.dtype
            np.testing.assert_allclose(theirs, ours, rtol=RTOL, atol=atol)
    return made


def floats(*shape, seed=0):
    return mg.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def ids(batch, steps, vocab, seed=0):
    return mg.tensor(np.random.default_rng(seed).integers(1, vocab, (batch, steps)))


def lengths(batch, steps, seed=0):
    values = np.random.default_rng(seed).integers(1, steps + 1, batch)
    values[0] = steps
    return mg.tensor(values.astype(np.int64))


BATCH_TIME = {0: "batch", 1: "time"}


@pytest.mark.parametrize("activation", [nn.ReLU, nn.GELU, nn.Tanh])
def test_an_mlp(activation):
    mg.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(6, 16), activation(), nn.Dropout(0.5), nn.Linear(16, 16), activation(),
        nn.LayerNorm(16), nn.Linear(16, 3), nn.LogSoftmax(dim=-1),
    )  # fmt: skip
    assert_exports(
        model, [(floats(4, 6),), (floats(9, 6, seed=1),)], ["x"],
        {"x": {0: "batch"}, "logits": {0: "batch"}}, ["logits"],
    )  # fmt: skip


class EmbeddingClassifier(nn.Module):
    """Embedding, LayerNorm, reshape/transpose/indexing/cat, softmax."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(20, 8)
        self.norm = nn.LayerNorm(8)
        self.mix = nn.Linear(16, 8)

    def forward(self, ids):
        x = self.norm(self.embedding(ids))  # (B, T, 8)
        batch, steps, _ = x.shape
        heads = x.reshape(batch, steps, 2, 4).permute(0, 2, 1, 3)  # (B, 2, T, 4)
        back = heads.transpose(1, 2).reshape(batch, steps, 8)
        joined = mg.cat([x, back * 0.5], dim=-1)  # (B, T, 16)
        first, last = joined[:, 0], joined[:, -1]
        pooled = (first + last + joined.mean(dim=1)) / 3
        flat = self.mix(joined).reshape(-1, 8)  # (B*T, 8)
        return mg.softmax(self.mix(pooled), dim=-1), flat.softmax(dim=-1)


def test_embedding_layer_norm_and_the_shape_ops():
    mg.manual_seed(1)
    model = EmbeddingClassifier()
    assert_exports(
        model, [(ids(3, 5, 20),), (ids(2, 7, 20, seed=1),)], ["ids"],
        {"ids": BATCH_TIME, "probs": {0: "batch"}, "rows": {0: "rows"}}, ["probs", "rows"],
    )  # fmt: skip


def test_a_small_cnn():
    mg.manual_seed(2)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, stride=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8, 5),
    )  # fmt: skip
    assert_exports(
        model, [(floats(2, 1, 8, 8),), (floats(5, 1, 8, 8, seed=1),)], ["image"],
        {"image": {0: "batch"}, "logits": {0: "batch"}}, ["logits"],
    )  # fmt: skip


class Attending(nn.Module):
    """SelfAttention with lengths or a key padding mask, then a pooling."""

    def __init__(self, pool, causal=False):
        super().__init__()
        self.attention = nn.SelfAttention(8, num_heads=2, causal=causal, bias=True)
        self.pool = {
            "mean": nn.MeanPooling(),
            "dot": nn.AttentionPooling(nn.DotProductScore(8)),
            "additive": nn.AttentionPooling(nn.AdditiveScore(8, hidden_size=6)),
        }[pool]

    def forward(self, x, lengths):
        return self.pool(self.attention(x, lengths=lengths), lengths)


@pytest.mark.parametrize("pool", ["mean", "dot", "additive"])
@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_with_lengths_and_attention_pooling(pool, causal):
    mg.manual_seed(3)
    model = Attending(pool, causal)
    runs = [(floats(3, 5, 8), lengths(3, 5)), (floats(4, 7, 8, seed=1), lengths(4, 7, seed=1))]
    assert_exports(
        model, runs, ["x", "lengths"], {"x": BATCH_TIME, "lengths": {0: "batch"}, "y": [0]}, ["y"]
    )


class PaddingMasked(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.SelfAttention(8, num_heads=4)

    def forward(self, x, padding):
        return self.attention(x, key_padding_mask=padding)


def test_self_attention_with_a_key_padding_mask():
    mg.manual_seed(4)

    def padding(batch, steps, seed):
        return mg.tensor(np.arange(steps)[None, :] >= lengths(batch, steps, seed).numpy()[:, None])

    runs = [(floats(2, 4, 8), padding(2, 4, 0)), (floats(3, 6, 8, seed=1), padding(3, 6, 1))]
    assert_exports(
        PaddingMasked(), runs, ["x", "padding"], {"x": BATCH_TIME, "padding": BATCH_TIME}
    )


class Recurrent(nn.Module):
    def __init__(self, kind, **settings):
        super().__init__()
        self.rnn = getattr(nn, kind)(6, 5, batch_first=True, **settings)

    def forward(self, x, lengths):
        return self.rnn(x, lengths=lengths)


@pytest.mark.parametrize(
    "kind, settings",
    [
        ("LSTM", {}),
        ("LSTM", {"bidirectional": True}),
        ("LSTM", {"bidirectional": True, "num_layers": 2}),
        ("GRU", {"bidirectional": True}),
        ("GRU", {"num_layers": 2}),
        ("RNN", {}),
        ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
    ],
)
def test_recurrent_layers_with_lengths(kind, settings):
    mg.manual_seed(5)
    model = Recurrent(kind, **settings)
    runs = [(floats(3, 5, 6), lengths(3, 5)), (floats(4, 8, 6, seed=1), lengths(4, 8, seed=1))]
    outputs = ["output", "h_n", "c_n"] if kind == "LSTM" else ["output", "h_n"]
    dynamic = {"x": BATCH_TIME, "lengths": {0: "batch"}, "output": BATCH_TIME}
    dynamic.update({name: {1: "batch"} for name in outputs[1:]})
    assert_exports(model, runs, ["x", "lengths"], dynamic, outputs)


@pytest.mark.parametrize("pool", ["mean", "additive", "dot", "mhsa"])
def test_the_sentiment_model(pool):
    from examples.sentiment.model import SentimentModel

    mg.manual_seed(6)
    model = SentimentModel(30, pool=pool, embedding_dim=8, hidden_size=8, num_heads=2)
    runs = [(ids(3, 6, 30), lengths(3, 6)), (ids(5, 9, 30, seed=1), lengths(5, 9, seed=1))]
    for tokens, count in runs:  # padded with 0 past each review's length, as the data loader
        tokens._data[np.arange(tokens.shape[1])[None, :] >= count.numpy()[:, None]] = 0
    dynamic = {"ids": BATCH_TIME, "lengths": {0: "batch"}, "logits": {0: "batch"}}
    assert_exports(model, runs, ["ids", "lengths"], dynamic, ["logits"])


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_the_character_transformer(positions):
    from examples.language_model.model import CharTransformer

    mg.manual_seed(7)
    model = CharTransformer(
        25, context=16, model_dim=8, num_heads=2, num_layers=2, ff_dim=16, positions=positions
    )
    runs = [(ids(2, 5, 25),), (ids(3, 11, 25, seed=1),)]
    assert_exports(model, runs, ["ids"], {"ids": BATCH_TIME, "logits": BATCH_TIME}, ["logits"])


class CrossAttending(nn.Module):
    def __init__(self, batch_first, **settings):
        super().__init__()
        self.attention = nn.MultiheadAttention(8, 2, batch_first=batch_first, **settings)

    def forward(self, query, memory, padding, causal):
        return self.attention(query, memory, memory, key_padding_mask=padding, attn_mask=causal)


def causal_mask(length, keys, kind):
    blocked = np.triu(np.ones((length, keys), bool), 1)
    return mg.tensor(
        blocked if kind == "bool" else np.where(blocked, -np.inf, 0).astype(np.float32)
    )


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_multihead_attention_with_masks(batch_first, mask_kind):
    mg.manual_seed(8)
    model = CrossAttending(batch_first)

    def inputs(batch, length, seed):
        shape = (batch, length, 8) if batch_first else (length, batch, 8)
        padding = mg.tensor(
            np.arange(length)[None, :] >= lengths(batch, length, seed).numpy()[:, None]
        )
        return (
            floats(*shape, seed=seed),
            floats(*shape, seed=seed + 5),
            padding,
            causal_mask(length, length, mask_kind),
        )

    batch_axis, time_axis = (0, 1) if batch_first else (1, 0)
    dynamic = {
        name: {batch_axis: "batch", time_axis: "time"} for name in ("query", "memory", "out")
    }
    dynamic.update(
        padding=BATCH_TIME,
        causal={0: "time", 1: "keys"},
        weights={0: "batch", 1: "time", 2: "keys"},
    )
    assert_exports(
        model, [inputs(2, 4, 0), inputs(3, 6, 1)], ["query", "memory", "padding", "causal"],
        dynamic, ["out", "weights"],
    )  # fmt: skip


class ShapeOps(nn.Module):
    """stack, split, unbind, expand, narrow, index arrays, None, powers."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 6)

    def forward(self, x):  # (B, T, 6)
        y = self.linear(x)
        left, right = y.split([2, 4], dim=-1)
        first, *_ = y.unbind(dim=-1)  # (B, T)
        picked = y[:, :, np.array([5, 0, 3])]  # (B, T, 3)
        stacked = mg.stack([left, picked[..., :2]], dim=1)  # (B, 2, T, 2)
        scale = (right.narrow(2, 1, 2) ** 2 - 1) / 3  # (B, T, 2)
        grown = first[:, :, None].expand(-1, -1, 2)  # (B, T, 2)
        return stacked.sum(dim=1) + scale - grown, y[None, :, -1].sigmoid()


def test_shape_ops_keep_dynamic_axes():
    mg.manual_seed(9)
    runs = [(floats(2, 3, 6),), (floats(4, 5, 6, seed=1),)]
    dynamic = {"x": BATCH_TIME, "y": BATCH_TIME, "last": {1: "batch"}}
    assert_exports(ShapeOps(), runs, ["x"], dynamic, ["y", "last"])


class Signal(nn.Module):
    """conv1d, 1-d pooling, the other activations and unary ops, chunk, causal attention."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 4, 3, padding=2, dilation=2)
        self.pools = nn.Sequential(nn.MaxPool1d(2, ceil_mode=True), nn.AvgPool1d(1))
        self.act = nn.Sequential(nn.SiLU(), nn.LeakyReLU(0.1))

    def forward(self, x):  # (B, 3, L)
        y = self.pools(self.act(self.conv(x)))  # (B, 4, L')
        a, b = y.chunk(2, dim=1)
        waves = a.sin() + b.cos() + (a.abs() + 1).log() + (b * b + 1).sqrt()
        q = y.transpose(1, 2)[:, None]  # (B, 1, L', 4)
        attended = mg.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        return waves, attended[:, 0].exp()


def test_conv1d_pooling_and_the_other_ops():
    mg.manual_seed(10)
    runs = [(floats(2, 3, 9),), (floats(3, 3, 14, seed=1),)]
    dynamic = {"x": {0: "batch", 2: "length"}, "waves": [0, 2], "attended": [0, 1]}
    assert_exports(Signal(), runs, ["x"], dynamic, ["waves", "attended"])
