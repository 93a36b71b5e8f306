"""The reductions that skip NaN (minigrad/ops/nanreduce.py: nansum, nanmean ...) against torch:
values, dtypes and gradients along every dim, all-NaN rows, integer inputs.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import DTypeError, ShapeError
from op_checks import check_against_torch, inf, nan, values

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@pytest.mark.parametrize(
    "dim, keepdim", [(None, False), (1, False), (0, True), ((0, 1), False), (-1, True)]
)
def test_nan_reductions(name, dim, keepdim, dtype):
    x = np.array([[1.0, nan, 3.0], [nan, nan, nan], [inf, 2.0, -1.0]], dtype)
    kwargs = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    check_against_torch(
        lambda t: getattr(mg, name)(t, **kwargs),
        lambda t: getattr(torch, name)(t, **kwargs),
        [x],
        dtype,
    )
    check_against_torch(
        lambda t: getattr(t, name)(**kwargs),
        lambda t: getattr(t, name)(**kwargs),
        [values(-1, 1, (3, 3), dtype)],
        dtype,
    )
    assert mg.gradcheck(
        lambda t: getattr(mg, name)(t, **kwargs), [values(-1, 1, (3, 3), "float64")]
    )


def test_nan_reductions_on_integers_and_dtype():
    ints = np.array([[1, 2], [3, 4]])
    check_against_torch(mg.nansum, torch.nansum, [ints], "int64")
    check_against_torch(
        lambda t: mg.nansum(t, dtype=mg.float64),
        lambda t: torch.nansum(t, dtype=torch.float64),
        [np.float32([[1, nan]])],
        "float64",
    )
    check_against_torch(
        lambda t: mg.nanmean(t, dtype=mg.float64),
        lambda t: torch.nanmean(t, dtype=torch.float64),
        [np.float32([[1, nan]])],
        "float64",
    )
    for kwargs in ({}, {"dtype": mg.float64}):  # torch refuses integers even with dtype=
        with pytest.raises(
            DTypeError, match="nanmean: expected a float32 or float64 input; got dtype int64"
        ):
            mg.nanmean(mg.tensor(ints), **kwargs)


def f32(*shape):
    return mg.ones(*shape)


def f64(*shape):
    return mg.ones(*shape, dtype=mg.float64)


def i64(*shape):
    return mg.ones(*shape, dtype=mg.int64)


BAD_DIMS = [  # call, exception, message
    (lambda: mg.nansum(f32(2, 3), dim=2), mg.DimError, "dim 2 is out of range"),
    (lambda: mg.nanmean(f32(2, 3), dim=(0, 0)), ShapeError, "names a dim more than once"),
]


@pytest.mark.parametrize(
    "call, error, message", BAD_DIMS, ids=[f"bad{k}" for k in range(len(BAD_DIMS))]
)
def test_bad_dims_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
    # torch raises RuntimeError (TypeError for the types)
    assert issubclass(error, (TypeError, RuntimeError))
