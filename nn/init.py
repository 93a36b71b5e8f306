"""Weight initialisers, in place like torch.nn.init.

Each function overwrites `tensor.data` with draws from minigrad's generator (seeded by
`mg.manual_seed`), keeps the tensor's dtype and returns the tensor. Nothing is recorded in
the graph.

Fans follow PyTorch: for a weight of shape (out, in, *kernel), fan_in = in * prod(kernel)
and fan_out = out * prod(kernel); a 1-D tensor has no fans.
"""

import math

import numpy as np

from minigrad.random import generator as _draw


def _fill(tensor, values):
    tensor.data[...] = np.asarray(values, dtype=tensor.dtype)
    tensor._bump_version()  # changed in place: a graph that saved the old values must not use them
    return tensor


def _fans(tensor, caller):
    """(fan_in, fan_out) as torch computes them; needs at least 2 dimensions."""
    if tensor.ndim < 2:
        raise ValueError(
            f"{caller}: fan_in and fan_out need a tensor with at least 2 dimensions; "
            f"got shape {tensor.shape}"
        )
    receptive_field = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def calculate_gain(nonlinearity, param=None):
    """The gain torch recommends for a nonlinearity: 1 for linear/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope = param, default 0.01)."""
    if nonlinearity in ("linear", "identity", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(
        f"calculate_gain: expected one of linear, identity, sigmoid, tanh, relu, leaky_relu; "
        f"got {nonlinearity!r}"
    )


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    if not a <= b:
        raise ValueError(f"uniform_: expected a <= b; got a={a}, b={b}")
    return _fill(tensor, _draw(generator).uniform(a, b, size=tensor.shape))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    if std < 0:
        raise ValueError(f"normal_: std must be >= 0; got {std}")
    return _fill(tensor, _draw(generator).normal(mean, std, size=tensor.shape))


def constant_(tensor, value):
    """Fill with `value`."""
    return _fill(tensor, value)


def zeros_(tensor):
    return constant_(tensor, 0)


def ones_(tensor):
    return constant_(tensor, 1)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot: U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He: U(-bound, bound) with bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity,
    a).

    nn.Linear calls it with a=sqrt(5), which makes bound = 1 / sqrt(fan_in) (torch's default).
    """
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming_uniform_: mode must be 'fan_in' or 'fan_out'; got {mode!r}")
    fan_in, fan_out = _fans(tensor, "kaiming_uniform_")
    fan = fan_in if mode == "fan_in" else fan_out
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He: N(0, std^2) with std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a)."""
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming_normal_: mode must be 'fan_in' or 'fan_out'; got {mode!r}")
    fan_in, fan_out = _fans(tensor, "kaiming_normal_")
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std^2) with every value outside [a, b] drawn again (a, b are values, not multiples
    of std, as in torch), until all are inside."""
    if not a < b:
        raise ValueError(f"trunc_normal_: expected a < b; got a={a}, b={b}")
    draw = _draw(generator)
    values = draw.normal(mean, std, size=tensor.shape)
    for _ in range(1000):
        outside = (values < a) | (values > b)
        if not outside.any():
            return _fill(tensor, values)
        values[outside] = draw.normal(mean, std, size=int(outside.sum()))
    raise ValueError(
        f"trunc_normal_: [a, b] = [{a}, {b}] holds almost none of N({mean}, {std}^2); widen it"
    )


__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "zeros_",
    "ones_",
    "xavier_uniform_",
    "kaiming_uniform_",
    "xavier_normal_",
    "kaiming_normal_",
    "trunc_normal_",
]
