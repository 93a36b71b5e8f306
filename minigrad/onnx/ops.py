"""ONNX for one recorded graph node: CONVERTERS maps a Function's name to a converter.

A converter gets the graph (graph.py), the node (its `attrs` and what its forward kept on it)
and the ONNX names of its inputs, and returns one name per output, each with its dims set.
An op with no converter here is refused by export(), by name, before anything is written.
"""

import math

import numpy as np

from .graph import INT64_MAX, broadcast_dims, is_dynamic, static

CONVERTERS = {}


def converts(*names):
    def register(function):
        for name in names:
            CONVERTERS[name] = function
        return function

    return register


def elementwise(op_type):
    return lambda g, node, ins: [g.same(op_type, ins, ins[0])]


for _name, _op_type in {
    "Relu": "Relu", "Tanh": "Tanh", "Sigmoid": "Sigmoid", "Exp": "Exp", "Neg": "Neg",
    "Log": "Log", "Sqrt": "Sqrt", "Abs": "Abs", "Sin": "Sin", "Cos": "Cos", "Clone": "Identity",
}.items():  # fmt: skip
    CONVERTERS[_name] = elementwise(_op_type)


@converts("Add", "Sub", "Mul", "Div")
def arithmetic(g, node, ins):
    return [g.broadcast(node.name, ins[0], ins[1])]


@converts("PowScalar")
def power(g, node, ins):
    exponent = g.scalar(node.attrs["exponent"], node.output_meta[0][1])
    return [g.same("Pow", [ins[0], exponent], ins[0])]


@converts("SiLU")
def silu(g, node, ins):
    return [g.same("Mul", [ins[0], g.same("Sigmoid", [ins[0]], ins[0])], ins[0])]


@converts("LeakyReLU")
def leaky_relu(g, node, ins):
    return [g.same("LeakyRelu", ins, ins[0], alpha=node.attrs["negative_slope"])]


@converts("GELU")
def gelu(g, node, ins):
    x, dtype = ins[0], node.output_meta[0][1]
    if node.attrs["approximate"] == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.same("Mul", [g.same("Mul", [x, x], x), x], x)
        inner = g.same("Add", [x, g.same("Mul", [cube, g.scalar(0.044715, dtype)], x)], x)
        inner = g.same("Mul", [inner, g.scalar(math.sqrt(2 / math.pi), dtype)], x)
        half = g.same("Add", [g.same("Tanh", [inner], x), g.scalar(1.0, dtype)], x)
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        erf = g.same("Erf", [g.same("Mul", [x, g.scalar(1 / math.sqrt(2), dtype)], x)], x)
        half = g.same("Add", [erf, g.scalar(1.0, dtype)], x)
    return [g.same("Mul", [g.same("Mul", [x, half], x), g.scalar(0.5, dtype)], x)]


@converts("Linear")
def linear(g, node, ins):
    x, weight = ins[0], ins[1]
    y = g.node("MatMul", [x, g.transpose(weight, (1, 0))])
    g.dims[y] = g.dims[x][:-1] + [static(node.output_meta[0][0][-1])]
    return [y if len(ins) == 2 else g.broadcast("Add", y, ins[2])]


@converts("MatMul")
def matmul(g, node, ins):
    a, b = ins
    da, db = g.dims[a], g.dims[b]
    y = g.node("MatMul", [a, b])
    if len(da) == 1 and len(db) == 1:
        g.dims[y] = []
    elif len(db) == 1:
        g.dims[y] = da[:-1]
    elif len(da) == 1:
        g.dims[y] = db[:-2] + db[-1:]
    else:
        g.dims[y] = broadcast_dims(da[:-2], db[:-2]) + [da[-2], db[-1]]
    return [y]


@converts("LayerNorm")
def layer_norm(g, node, ins):
    x, dtype, features = ins[0], node.output_meta[0][1], node.output_meta[0][0][-1]
    affine = list(ins[1:])
    weight = affine.pop(0) if node.attrs["has_weight"] else g.constant(np.ones(features, dtype))
    bias = affine.pop(0) if node.attrs["has_bias"] else g.constant(np.zeros(features, dtype))
    return [g.same("LayerNormalization", [x, weight, bias], x, axis=-1, epsilon=node.attrs["eps"])]


@converts("Softmax", "LogSoftmax")
def softmax(g, node, ins):
    attrs = node.attrs
    plain = attrs.get("scale", 1.0) == 1.0 and not attrs.get("causal", False)
    if not plain or attrs.get("mask", None) is not None or attrs.get("key_stop", None) is not None:
        raise NotImplementedError("a masked or scaled softmax (mg.masked_softmax)")
    return [g.same(node.name, ins, ins[0], axis=int(attrs["dim"]))]


@converts("Cast")
def cast(g, node, ins):
    to = g.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(node.output_meta[0][1]))
    return [g.same("Cast", ins, ins[0], to=to)]


@converts("Reshape")
def reshape(g, node, ins):
    return [g.reshape(ins[0], node.output_meta[0][0])]


@converts("Permute")
def permute(g, node, ins):
    return [g.transpose(ins[0], node.attrs["dims"])]


@converts("Expand")
def expand(g, node, ins):
    dims, shape = g.dims[ins[0]], node.output_meta[0][0]
    dims = [static(1)] * (len(shape) - len(dims)) + list(dims)
    # 1 where x's axis already has the size: ONNX's Expand keeps it (bidirectional broadcast)
    target = [1 if d[0] == size else size for d, size in zip(dims, shape)]
    y = g.node("Expand", [ins[0], g.ints(target)])
    g.dims[y] = [d if d[0] == size else static(size) for d, size in zip(dims, shape)]
    return [y]


@converts("Sum", "Mean")
def reduce(g, node, ins):
    axes, keep = list(node.attrs["dims"]), int(bool(node.attrs["keepdim"]))
    op_type = "ReduceSum" if node.name == "Sum" else "ReduceMean"
    if op_type == "ReduceSum" or g.opset >= 18:
        y = g.node(op_type, [ins[0], g.ints(axes)], keepdims=keep)
    else:
        y = g.node(op_type, [ins[0]], axes=axes, keepdims=keep)
    dims = g.dims[ins[0]]
    g.dims[y] = [
        (static(1) if keep else None) if axis in axes else d for axis, d in enumerate(dims)
    ]
    g.dims[y] = [d for d in g.dims[y] if d is not None]
    return [y]


@converts("Cat")
def cat(g, node, ins):
    axis = int(node.attrs["dim"])
    y = g.node("Concat", ins, axis=axis)
    dims = list(g.dims[ins[0]])
    if any(is_dynamic(g.dims[name][axis]) for name in ins):
        dims[axis] = None
    g.dims[y] = g.fresh_dims(y, node.output_meta[0][0], dims)
    return [y]


@converts("Stack")
def stack(g, node, ins):
    axis = int(node.attrs["dim"])
    return cat(g, _Attrs(node, dim=axis), [g.unsqueeze(name, [axis]) for name in ins])


@converts("Split", "Unbind")
def split(g, node, ins):
    axis = int(node.attrs["dim"])
    sizes = [shape[axis] if node.name == "Split" else 1 for shape, _ in node.output_meta]
    outs = g.node("Split", [ins[0], g.ints(sizes)], outputs=len(sizes), axis=axis)
    outs = outs if isinstance(outs, list) else [outs]
    results = []
    for out, (shape, _) in zip(outs, node.output_meta):
        dims = list(g.dims[ins[0]])
        dims[axis] = static(sizes[0]) if node.name == "Unbind" else static(shape[axis])
        g.dims[out] = dims
        if node.name == "Unbind":
            out = g.node("Squeeze", [out, g.ints([axis])])
            g.dims[out] = dims[:axis] + dims[axis + 1 :]
        results.append(out)
    return results


@converts("Narrow")
def narrow(g, node, ins):
    axis, start, length = (int(node.attrs[key]) for key in ("dim", "start", "length"))
    y = g.node("Slice", [ins[0], g.ints([start]), g.ints([start + length]), g.ints([axis])])
    dims = list(g.dims[ins[0]])
    dims[axis] = static(length)
    g.dims[y] = dims
    return [y]


@converts("GetItem")
def getitem(g, node, ins):
    """Integers, slices (step > 0), None, Ellipsis and one integer array; no bool masks."""
    first, then = node.first, node.then
    arrays_only = len(first) == 1 and first[0] is Ellipsis
    parts = list(first if then is None else then if arrays_only else ())
    if then is not None and not arrays_only:
        raise NotImplementedError("indexing that mixes integers and index arrays")
    if any(isinstance(p, np.ndarray) and p.dtype == np.bool_ for p in parts):
        raise NotImplementedError("indexing with a bool mask (a data-dependent shape)")
    x, dims = ins[0], list(g.dims[ins[0]])
    used = sum(1 for p in parts if p is not None and p is not Ellipsis)
    at = next((i for i, p in enumerate(parts) if p is Ellipsis), None)
    if at is not None:
        parts[at : at + 1] = [slice(None)] * (len(dims) - used)
    axis = 0
    for part in parts:
        if part is None:
            x = g.unsqueeze(x, [axis])
            axis += 1
        elif isinstance(part, slice):
            x = _slice(g, x, axis, part)
            axis += 1
        elif isinstance(part, np.ndarray):
            y = g.node("Gather", [x, g.constant(part.astype(np.int64), "index")], axis=axis)
            d = g.dims[x]
            g.dims[y] = d[:axis] + [static(s) for s in part.shape] + d[axis + 1 :]
            x, axis = y, axis + part.ndim
        else:  # an integer: the axis goes
            y = g.node("Gather", [x, g.constant(np.array(int(part), np.int64))], axis=axis)
            g.dims[y] = g.dims[x][:axis] + g.dims[x][axis + 1 :]
            x = y
    return [x]


def _slice(g, x, axis, part):
    if part.step is not None and part.step < 1:
        raise NotImplementedError(f"a slice with step {part.step}")
    dim = g.dims[x][axis]
    start = 0 if part.start is None else int(part.start)
    stop = INT64_MAX if part.stop is None else int(part.stop)
    step = 1 if part.step is None else int(part.step)
    whole = start == 0 and step == 1 and (stop == INT64_MAX or stop >= dim[0] and not dim[1])
    if whole:
        return x
    y = g.node("Slice", [x, g.ints([start]), g.ints([stop]), g.ints([axis]), g.ints([step])])
    size = len(range(*part.indices(dim[0])))
    dims = list(g.dims[x])
    # a slice counted from the end of a dynamic axis keeps it dynamic; a fixed window does not
    dims[axis] = (
        None if is_dynamic(dim) and (start < 0 or stop < 0 or stop == INT64_MAX) else (static(size))
    )
    g.dims[y] = g.fresh_dims(y, [d[0] if d else size for d in dims], dims)
    return y


@converts("Convolution")
def convolution(g, node, ins):
    attrs = node.attrs
    padding = [int(p) for p in attrs["padding"] for p in p]
    pads = padding[0::2] + padding[1::2]  # ONNX: every before, then every after
    y = g.node(
        "Conv",
        ins,
        pads=pads,
        strides=list(attrs["stride"]),
        dilations=list(attrs["dilation"]),
        group=int(attrs["groups"]),
    )
    return [_spatial(g, y, ins[0], node.output_meta[0][0])]


def _spatial(g, y, x, shape):
    """dims of a conv or pool output: the batch axis kept, the spatial ones new where dynamic."""
    dims = g.dims[x]
    like = [dims[0], static(shape[1])] + [None if is_dynamic(d) else static(0) for d in dims[2:]]
    g.dims[y] = g.fresh_dims(y, shape, like)
    return y


@converts("ScaledDotProductAttention")
def scaled_dot_product_attention(g, node, ins):
    from .layers import attention_core

    attrs = node.attrs
    for key in ("mask", "key_lengths", "keep"):
        if attrs.get(key, "array") is not None:
            raise NotImplementedError(
                f"scaled_dot_product_attention with {key} (masks are exported by the layers "
                "SelfAttention and MultiheadAttention)"
            )
    if attrs.get("dropout_p"):
        raise NotImplementedError("attention dropout (export in eval mode)")
    out, weights = attention_core(
        g, *ins, attrs["scale"], None, attrs["causal"], attrs.get("causal_offset") or 0
    )
    return [out, weights]


class _Attrs:
    """A node seen with other attrs (a converter reused by another)."""

    def __init__(self, node, **attrs):
        self.name, self.output_meta, self.attrs = node.name, node.output_meta, attrs
