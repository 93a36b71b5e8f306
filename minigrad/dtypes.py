"""Which dtype a tensor gets: the one home of minigrad's dtype rules (PyTorch's, not numpy's).

- Tensors hold float32, float64, int64, int32, uint8 or bool; only float tensors take gradients.
- Python floats become the default float dtype (float32 unless `set_default_dtype` says
  otherwise), Python ints int64, Python bools bool. A numpy array keeps its dtype.
- A binary op's result type (`result_type`): numpy promotes int64 with float32 to float64;
  PyTorch keeps the float operand's dtype. And a Python number, or a 0-d tensor, sets the
  result's dtype only when it is of a higher category (bool < integer < float) than the
  tensors with dims: float32 tensor * 2.5 is float32, int64 tensor * 2.5 is the default
  float, float32 tensor * a float64 0-d tensor is float32.
"""

import numpy as np

from .errors import DTypeError

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)

FLOAT_DTYPES = (float32, float64)
ALLOWED_DTYPES = FLOAT_DTYPES + (int64, int32, uint8, bool_)
NUMBERS = (bool, int, float, np.bool_, np.number)  # Python and numpy scalars

_default = float32


def get_default_dtype():
    """The dtype of Python floats and of new float tensors (float32 unless changed)."""
    return _default


def set_default_dtype(dtype):
    """Make float64 (or back float32) the dtype of Python floats and new float tensors."""
    global _default
    dtype = as_dtype(dtype)
    if dtype not in FLOAT_DTYPES:
        raise DTypeError(f"set_default_dtype: expected float32 or float64; got {dtype}")
    _default = dtype


def as_dtype(dtype):
    """np.dtype for a dtype-like, None stays None; refuses dtypes a tensor cannot hold."""
    if dtype is None:
        return None
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"expected a dtype such as mg.float32; got {dtype!r}") from None
    if dtype not in ALLOWED_DTYPES:
        raise DTypeError(
            f"minigrad tensors hold one of {', '.join(map(str, ALLOWED_DTYPES))}; got dtype {dtype}"
        )
    return dtype


def is_float(dtype):
    return dtype in FLOAT_DTYPES


def to_array(data, dtype=None):
    """Python data or a numpy array -> numpy array of an allowed dtype (not copied if it
    already is one). Python floats become the default float dtype; numpy arrays keep theirs."""
    dtype = as_dtype(dtype)
    from_python = not isinstance(data, (np.ndarray, np.generic))
    array = np.asarray(data, dtype=dtype)
    if dtype is None and from_python and array.dtype == float64:
        array = array.astype(_default)
    if array.dtype not in ALLOWED_DTYPES:
        as_dtype(array.dtype)  # raises with the list of allowed dtypes
    return array


def number_dtype(value):
    """The dtype a Python (or numpy) scalar stands for when it meets a tensor."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    return _default


def promote_types(a, b):
    """Two dtypes -> one: the float one if exactly one is float, else numpy's promotion."""
    if a == b:
        return a
    if (a.kind == "f") != (b.kind == "f"):
        return a if a.kind == "f" else b
    return np.promote_types(a, b)


def result_type(*operands):
    """The dtype PyTorch gives an elementwise op on these tensors, arrays or numbers."""
    groups = [None, None, None]  # tensors with dims, 0-d tensors, numbers
    for x in operands:
        if isinstance(x, NUMBERS):
            group, dtype = 2, number_dtype(x)
        else:
            if not hasattr(x, "dtype"):
                x = to_array(x)
            group, dtype = (0 if x.ndim else 1), x.dtype
        groups[group] = dtype if groups[group] is None else promote_types(groups[group], dtype)
    dimensioned, zero_dim, numbers = groups
    return _combine(dimensioned, _combine(zero_dim, numbers))


def _combine(higher, lower):
    """higher's dtype unless lower is of a higher category (PyTorch's combine_categories);
    either may be None (no operand of that kind)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return promote_types(higher, lower)
    return higher


def float_result(dtype):
    """The dtype of a float-valued op (exp, sqrt, mean, true division) on this input dtype:
    float inputs keep theirs, integer and bool inputs give the default float, as in torch."""
    return dtype if dtype.kind == "f" else _default
