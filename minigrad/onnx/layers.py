"""ONNX for whole layer calls: the layers whose forward reads integer inputs (ids, lengths, masks)
as numpy, or loops over time steps, are written from the layer's parameters and its call's
arguments instead of from the nodes they record. LAYERS maps a module class's name to a
converter(graph, call, value) -> one ONNX name per tensor of the call's output (in the order
`export.flatten` lists them); value(tensor) is the ONNX name of any tensor of the call.
"""

import math

import numpy as np

from .graph import static

LAYERS = {}


def converts(*names):
    def register(function):
        for name in names:
            LAYERS[name] = function
        return function

    return register


def _argument(call, index, name, default=None):
    if len(call.args) > index:
        return call.args[index]
    return call.kwargs.get(name, default)


def _refuse(call, *names):
    for name in names:
        if call.kwargs.get(name) is not None:
            raise NotImplementedError(f"{type(call.module).__name__} called with {name}=")


def positions_below(g, length_dim, lengths):
    """(B, T) bool: position t < lengths[b]; T the runtime size of length_dim."""
    steps = g.node("Squeeze", [g.dim_tensor(length_dim), g.ints([0])])
    zero, one = g.constant(np.array(0, np.int64)), g.constant(np.array(1, np.int64))
    positions = g.node("Range", [zero, steps, one])
    g.dims[positions] = [length_dim]
    lengths = g.node("Cast", [lengths], to=g.onnx.TensorProto.INT64)
    column = g.node("Unsqueeze", [lengths, g.ints([1])])
    valid = g.node("Less", [positions, column])
    return valid


def attention_core(g, q, k, v, scale, allowed, causal, offset):
    """softmax(q k^T * scale, masked) v for q (..., L, E), k (..., S, E), v (..., S, Ev); allowed:
    a bool name broadcastable to (..., L, S) or None. A query with no key allowed gets weights
    0. Returns (out, weights)."""
    dq, dk, dv = g.dims[q], g.dims[k], g.dims[v]
    rank = len(dk)
    keys_t = g.transpose(k, list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = g.node("MatMul", [q, keys_t])
    g.dims[scores] = dq[:-1] + [dk[-2]]
    scores = g.same("Mul", [scores, g.scalar(scale, np.float32)], scores)
    if causal:
        square = g.node("Concat", [g.dim_tensor(dq[-2]), g.dim_tensor(dk[-2])], axis=0)
        ones = g.node("ConstantOfShape", [square], value=_tensor(g, np.ones(1, np.float32)))
        lower = g.node("Trilu", [ones, g.constant(np.array(offset, np.int64))], upper=0)
        below = g.node("Cast", [lower], to=g.onnx.TensorProto.BOOL)
        allowed = below if allowed is None else g.node("And", [allowed, below])
    if allowed is not None:
        minus_inf = g.scalar(-np.inf, np.float32)
        scores = g.same("Where", [allowed, scores, minus_inf], scores)
    weights = g.same("Softmax", [scores], scores, axis=-1)
    if allowed is not None:  # a row of -inf is NaN after Softmax: weights 0 there, as minigrad
        weights = g.same("Where", [allowed, weights, g.scalar(0.0, np.float32)], weights)
    out = g.node("MatMul", [weights, v])
    g.dims[out] = g.dims[weights][:-1] + [dv[-1]]
    return out, weights


def _tensor(g, array):
    return g.onnx.numpy_helper.from_array(array)


@converts("Embedding")
def embedding(g, call, value):
    if call.module.max_norm is not None:
        raise NotImplementedError("Embedding with max_norm (it rewrites its weight in forward)")
    ids = value(call.args[0])
    weight = value(call.module.weight)
    y = g.node("Gather", [weight, ids], axis=0)
    g.dims[y] = g.dims[ids] + [static(call.module.embedding_dim)]
    return [y]


@converts("PositionalEmbedding", "SinusoidalPositionalEncoding")
def positional_embedding(g, call, value):
    """x + table[offset : offset + T], T the runtime length of x."""
    x, offset = value(call.args[0]), int(_argument(call, 1, "offset", 0))
    if type(call.module).__name__ == "PositionalEmbedding":
        table = value(call.module.weight)
    else:  # the table the traced run used, whole (max_length rows)
        table = g.constant(call.module._tables[call.outputs[0].dtype], "positions")
    steps = g.dims[x][-2]
    stop = g.node("Add", [g.dim_tensor(steps), g.ints([offset])])
    rows = g.node("Slice", [table, g.ints([offset]), stop, g.ints([0])])
    g.dims[rows] = [steps, static(call.module.model_dim)]
    return [g.broadcast("Add", x, rows)]


@converts("SelfAttention")
def self_attention(g, call, value):
    module = call.module
    _refuse(call, "cache")
    x = value(call.args[0])
    lengths = _argument(call, 1, "lengths")
    padding = _argument(call, 2, "key_padding_mask")
    batch, steps, _ = g.dims[x]

    def project(x, name):
        y = g.node("MatMul", [x, value(getattr(module, f"{name}_weight"))])
        g.dims[y] = g.dims[x][:-1] + [static(module.model_dim)]
        bias = getattr(module, f"{name}_bias")
        return y if bias is None else g.broadcast("Add", y, value(bias))

    def split_heads(y):
        y = g.reshape(y, (batch[0], steps[0], module.num_heads, module.head_dim))
        return g.transpose(y, (0, 2, 1, 3))

    q, k, v = (split_heads(project(x, name)) for name in ("query", "key", "value"))
    allowed = None
    if lengths is not None:
        allowed = positions_below(g, steps, value(lengths))
    elif padding is not None:
        allowed = g.node("Not", [value(padding)])
    if allowed is not None:
        allowed = g.node("Unsqueeze", [allowed, g.ints([1, 2])])  # (B, 1, 1, T)
    scale = 1.0 / math.sqrt(module.head_dim)
    context, _ = attention_core(g, q, k, v, scale, allowed, module.causal, 0)
    context = g.reshape(g.transpose(context, (0, 2, 1, 3)), (batch[0], steps[0], module.model_dim))
    return [project(context, "output")]


def _pooling_valid(g, call, value, x):
    """(B, T) bool of the real positions from lengths or mask, or None (every position)."""
    lengths, mask = _argument(call, 1, "lengths"), _argument(call, 2, "mask")
    if lengths is not None:
        return positions_below(g, g.dims[x][1], value(lengths))
    if mask is not None:
        return g.node("Cast", [value(mask)], to=g.onnx.TensorProto.BOOL)
    return None


def _weighted_sum(g, x, weights):
    """sum_t weights (B, T) * x (B, T, D) -> (B, D)."""
    column = g.node("Unsqueeze", [weights, g.ints([2])])
    product = g.node("Mul", [x, column])
    y = g.node("ReduceSum", [product, g.ints([1])], keepdims=0)
    g.dims[y] = [g.dims[x][0], g.dims[x][2]]
    return y


@converts("MeanPooling")
def mean_pooling(g, call, value):
    x = value(call.args[0])
    valid = _pooling_valid(g, call, value, x)
    if valid is None:
        y = (
            g.node("ReduceMean", [x, g.ints([1])], keepdims=0)
            if g.opset >= 18
            else (g.node("ReduceMean", [x], axes=[1], keepdims=0))
        )
        g.dims[y] = [g.dims[x][0], g.dims[x][2]]
        return [y]
    valid = g.node("Cast", [valid], to=g.onnx.TensorProto.FLOAT)
    counts = g.node("ReduceSum", [valid, g.ints([1])], keepdims=1)
    counts = g.node("Max", [counts, g.scalar(1.0, np.float32)])
    x = g.same("Where", [g.node("Unsqueeze", [_bool(g, valid), g.ints([2])]), x,
                         g.scalar(0.0, np.float32)], x)  # fmt: skip
    return [_weighted_sum(g, x, g.node("Div", [valid, counts]))]


def _bool(g, floats):
    return g.node("Cast", [floats], to=g.onnx.TensorProto.BOOL)


@converts("AttentionPooling")
def attention_pooling(g, call, value):
    x = value(call.args[0])
    score = call.module.score
    kind = type(score).__name__
    valid = _pooling_valid(g, call, value, x)
    if valid is not None:  # junk (inf, NaN) at padded positions reaches nothing
        column = g.node("Unsqueeze", [valid, g.ints([2])])
        x = g.same("Where", [column, x, g.scalar(0.0, np.float32)], x)
    if kind == "DotProductScore":
        scores = g.node("MatMul", [x, value(score.query)])
    elif kind == "AdditiveScore":
        query_term = g.node("MatMul", [value(score.query), value(score.query_weight)])
        hidden = g.node("MatMul", [x, value(score.input_weight)])
        hidden = g.node("Tanh", [g.node("Add", [hidden, query_term])])
        scores = g.node("MatMul", [hidden, value(score.score_vector)])
    else:
        raise NotImplementedError(f"AttentionPooling with a {kind} score")
    g.dims[scores] = g.dims[x][:2]
    if valid is not None:
        scores = g.same("Where", [valid, scores, g.scalar(-np.inf, np.float32)], scores)
    weights = g.same("Softmax", [scores], scores, axis=-1)
    if valid is not None:
        weights = g.same("Where", [valid, weights, g.scalar(0.0, np.float32)], weights)
    return [_weighted_sum(g, x, weights)]


@converts("MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d")
def pool(g, call, value):
    module, x = call.module, value(call.args[0])
    spatial = len(g.dims[x]) - 2

    def listed(setting):
        return list(setting) if isinstance(setting, (tuple, list)) else [int(setting)] * spatial

    settings = dict(
        kernel_shape=listed(module.kernel_size),
        strides=listed(module.stride),
        pads=listed(module.padding) * 2,
        ceil_mode=int(module.ceil_mode),
    )
    if type(module).__name__.startswith("Max"):
        if module.return_indices:
            raise NotImplementedError("MaxPool with return_indices=True")
        y = g.node("MaxPool", [x], dilations=listed(module.dilation), **settings)
    else:
        if getattr(module, "divisor_override", None):
            raise NotImplementedError("AvgPool with divisor_override")
        y = g.node("AveragePool", [x], count_include_pad=int(module.count_include_pad), **settings)
    from .ops import _spatial

    return [_spatial(g, y, x, call.outputs[0].shape)]


@converts("MultiheadAttention")
def multihead_attention(g, call, value):
    """torch's MultiheadAttention: packed or separate projections, a bool (True = masked) or
    float (added) attn_mask (L, S) and key_padding_mask (B, S); weights averaged over the heads
    unless average_attn_weights=False."""
    from ..engine import Tensor

    module = call.module
    names = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask")
    names += ("average_attn_weights", "is_causal")
    given = {name: _argument(call, index, name) for index, name in enumerate(names)}
    need_weights = given["need_weights"] is not False
    average = given["average_attn_weights"] is not False
    if given["query"].ndim != 3:
        raise NotImplementedError("MultiheadAttention on unbatched (2-D) inputs")
    embed, heads, depth = module.embed_dim, module.num_heads, module.head_dim

    def batch_first(tensor):
        x = value(tensor)
        return x if module.batch_first else g.transpose(x, (1, 0, 2))

    inputs = [batch_first(given[name]) for name in ("query", "key", "value")]
    if module._qkv_same_embed_dim:
        packed = module.in_proj_weight._data
        weights = [packed[i * embed : (i + 1) * embed] for i in range(3)]
    else:
        weights = [getattr(module, f"{n}_proj_weight")._data for n in ("q", "k", "v")]
    bias = None if module.in_proj_bias is None else module.in_proj_bias._data
    projected = []
    for index, (x, weight) in enumerate(zip(inputs, weights)):
        y = g.node("MatMul", [x, g.constant(np.ascontiguousarray(weight.T), "weight")])
        g.dims[y] = g.dims[x][:-1] + [static(embed)]
        if bias is not None:
            y = g.broadcast("Add", y, g.constant(bias[index * embed : (index + 1) * embed]))
        batch, steps, _ = g.dims[y]
        y = g.reshape(y, (batch[0], steps[0], heads, depth))
        projected.append(g.transpose(y, (0, 2, 1, 3)))  # (B, H, steps, depth)
    q, k, v = projected
    q = g.same("Mul", [q, g.scalar(1.0 / math.sqrt(depth), np.float32)], q)
    keys_t = g.transpose(k, (0, 1, 3, 2))
    scores = g.node("MatMul", [q, keys_t])
    g.dims[scores] = g.dims[q][:-1] + [g.dims[k][-2]]
    for name, axes in (("attn_mask", [0, 1]), ("key_padding_mask", [1, 2])):
        mask = given[name]
        if mask is None:
            continue
        if name == "attn_mask" and np.ndim(mask._data if isinstance(mask, Tensor) else mask) != 2:
            raise NotImplementedError("MultiheadAttention with a 3-D attn_mask")
        mask = value(mask) if isinstance(mask, Tensor) else g.constant(np.asarray(mask), "mask")
        mask = g.unsqueeze(mask, axes)
        if _dtype_of(given[name]) == np.bool_:
            scores = g.same("Where", [mask, g.scalar(-np.inf, np.float32), scores], scores)
        else:
            scores = g.broadcast("Add", scores, mask)
    weights = g.same("Softmax", [scores], scores, axis=-1)
    context = g.node("MatMul", [weights, v])
    g.dims[context] = g.dims[weights][:-1] + [g.dims[v][-1]]
    batch, _, steps, _ = g.dims[context]
    context = g.reshape(g.transpose(context, (0, 2, 1, 3)), (batch[0], steps[0], embed))
    out_proj = module.out_proj
    output = g.node("MatMul", [context, g.transpose(value(out_proj.weight), (1, 0))])
    g.dims[output] = list(g.dims[context])
    if out_proj.bias is not None:
        output = g.broadcast("Add", output, value(out_proj.bias))
    if not module.batch_first:
        output = g.transpose(output, (1, 0, 2))
    if not need_weights:
        return [output]
    if average:
        mean = g.node("ReduceMean", [weights, g.ints([1])], keepdims=0) if g.opset >= 18 else (
            g.node("ReduceMean", [weights], axes=[1], keepdims=0)
        )  # fmt: skip
        g.dims[mean] = [d for axis, d in enumerate(g.dims[weights]) if axis != 1]
        weights = mean
    return [output, weights]


def _dtype_of(mask):
    return np.asarray(getattr(mask, "_data", mask)).dtype
