"""Weight initialisers, in place like torch.nn.init: torch's whole list.

Each function overwrites the tensor's values (its array, in place: views and optimizers keep
seeing the same memory) with draws from minigrad's generator (seeded by `mg.manual_seed`, or
the `generator=` given), keeps the tensor's dtype, bumps its version and returns the tensor.
Nothing is recorded in the graph, so a Parameter that requires grad can be initialised at any
time. The random fills need a float tensor; constant_, zeros_, ones_, eye_ and dirac_ take any
dtype. The numbers drawn are not torch's (minigrad draws with numpy's PCG64); the
distributions are.

Fans follow PyTorch: for a weight of shape (out, in, *kernel), fan_in = in * prod(kernel)
and fan_out = out * prod(kernel); a 1-D tensor has no fans.
"""

import math
import numbers
import warnings

import numpy as np

from minigrad import DTypeError, Tensor
from minigrad.random import generator as _draw


def _target(tensor, caller, floats_only=True):
    """The tensor's own array (written in place), after checking what was passed."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{caller}: expected a Tensor; got {type(tensor).__name__}")
    if floats_only and tensor.dtype.kind != "f":
        raise DTypeError(
            f"nn.init.{caller}: random values need a float tensor (float32, float64); "
            f"got dtype {tensor.dtype}"
        )
    return tensor.numpy()


def _fill(tensor, values, caller="constant_", floats_only=True):
    _target(tensor, caller, floats_only)[...] = np.asarray(values, dtype=tensor.dtype)
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


def _calculate_fan_in_and_fan_out(tensor):
    """torch's private helper of that name, which ported reset_parameters() code calls."""
    return _fans(tensor, "_calculate_fan_in_and_fan_out")


# torch's names for layers whose gain is 1 (a linear map, before any nonlinearity)
# fmt: off
_LINEAR = (
    "linear", "identity", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
)
# fmt: on


def calculate_gain(nonlinearity, param=None):
    """The gain torch recommends for a nonlinearity: 1 for linear, conv* and sigmoid, 5/3 for
    tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope = param, default 0.01),
    3/4 for selu."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, (bool, np.bool_)):
            slope = float(param)
        else:
            raise ValueError(
                "calculate_gain: negative_slope must be a number; "
                f"got {param!r} (not a valid number)"
            )
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4  # torch's value, found empirically
    raise ValueError(
        f"calculate_gain: Unsupported nonlinearity {nonlinearity!r}; "
        f"expected one of {', '.join(_LINEAR)}, sigmoid, tanh, relu, leaky_relu, selu"
    )


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    _target(tensor, "uniform_")
    if not a <= b:
        raise ValueError(f"uniform_: expected a <= b; got a={a}, b={b}")
    return _fill(tensor, _draw(generator).uniform(a, b, size=tensor.shape))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    _target(tensor, "normal_")
    if std < 0:
        raise ValueError(f"normal_: std must be >= 0; got {std}")
    return _fill(tensor, _draw(generator).normal(mean, std, size=tensor.shape))


def constant_(tensor, value):
    """Fill with `value` (any dtype)."""
    return _fill(tensor, value, "constant_", floats_only=False)


def zeros_(tensor):
    return constant_(tensor, 0)


def ones_(tensor):
    return constant_(tensor, 1)


def _is_empty(tensor, caller):
    """True (with torch's warning) for a tensor with no elements: nothing to initialise."""
    _target(tensor, caller)
    if tensor.numel():
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
    return True


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
    if _is_empty(tensor, "kaiming_uniform_"):
        return tensor
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
    if _is_empty(tensor, "kaiming_normal_"):
        return tensor
    fan_in, fan_out = _fans(tensor, "kaiming_normal_")
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std^2) with every value outside [a, b] drawn again (a, b are values, not multiples
    of std, as in torch), until all are inside."""
    _target(tensor, "trunc_normal_")
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


def eye_(tensor):
    """The identity matrix (ones on the diagonal of a rectangular 2-D tensor too), any dtype."""
    _target(tensor, "eye_", floats_only=False)
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only 2-D tensors are supported; got shape {tensor.shape}")
    return _fill(tensor, np.eye(*tensor.shape), "eye_", floats_only=False)


def dirac_(tensor, groups=1):
    """The Dirac delta of a convolution weight (out, in, *kernel), 3-D to 5-D: a convolution with
    it (padding kernel // 2) passes each of the first min(out / groups, in) input channels of a
    group to the output channel of the same index, unchanged; the other weights are 0."""
    _target(tensor, "dirac_", floats_only=False)
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(
            "dirac_: only tensors with 3, 4, or 5 dimensions are supported; "
            f"got shape {tensor.shape}"
        )
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"dirac_: groups must be an integer >= 1; got {groups!r}")
    out_channels, in_channels = tensor.shape[:2]
    if out_channels % groups:
        raise ValueError(
            f"dirac_: dim 0 must be divisible by groups; got {out_channels} out channels and "
            f"groups={groups}"
        )
    per_group = out_channels // groups
    values = np.zeros(tensor.shape)
    centre = tuple(size // 2 for size in tensor.shape[2:])
    for group in range(groups):
        for channel in range(min(per_group, in_channels)):
            values[(group * per_group + channel, channel) + centre] = 1
    return _fill(tensor, values, "dirac_", floats_only=False)


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix times gain, for a tensor of 2 or more dims seen as (rows,
    cols) = (shape[0], the rest): Q^T Q = gain^2 I when rows >= cols, Q Q^T = gain^2 I when
    rows < cols. Q is the QR factor of a standard normal draw with the signs of R's diagonal
    folded in, so that Q is uniform (Haar) over the orthogonal matrices, as in torch."""
    _target(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(
            "orthogonal_: only tensors with 2 or more dimensions are supported; "
            f"got shape {tensor.shape}"
        )
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    draws = _draw(generator).normal(0.0, 1.0, size=(rows, cols))
    tall = draws if rows >= cols else draws.T  # QR of the tall way round: Q has orthonormal cols
    q, r = np.linalg.qr(tall)
    q = q * np.sign(np.diag(r))
    q = q if rows >= cols else q.T
    return _fill(tensor, gain * q.reshape(tensor.shape), "orthogonal_")


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A sparse 2-D matrix: N(0, std^2) values with ceil(sparsity * rows) of each column's set
    to zero, at rows drawn afresh for every column."""
    _target(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError(f"sparse_: only 2-D tensors are supported; got shape {tensor.shape}")
    if not 0 <= sparsity <= 1:
        raise ValueError(f"sparse_: sparsity is a fraction in [0, 1]; got {sparsity}")
    if std < 0:
        raise ValueError(f"sparse_: std must be >= 0; got {std}")
    draw = _draw(generator)
    rows, cols = tensor.shape
    zeros_per_column = math.ceil(sparsity * rows)
    values = draw.normal(0.0, std, size=(rows, cols))
    for column in range(cols):
        values[draw.permutation(rows)[:zeros_per_column], column] = 0
    return _fill(tensor, values, "sparse_")


# fmt: off
__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_",
    "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_",
    "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
]
# fmt: on
