"""The torch-parity harness: what every test that compares minigrad with PyTorch uses.

A comparison runs one call under both libraries on the same numpy arrays (`run_both`), backs both
outputs with the same upstream gradient, and compares values, dtypes, shapes and every input's
gradient (`assert_runs_match`, built on `assert_close`), within a tolerance of TOLERANCES, the
one table of them (by kind of check and dtype). A layer and its torch twin share one state
dict (`copy_state_to_torch`) and are compared by `assert_layer_matches_torch`. A call that torch
refuses must be refused by minigrad with an exception the same `except` catches
(`raises_like_torch`). `to_numpy` and `plain` turn either library's results into numpy and plain
Python, so they compare with `==` or `assert_close`.

torch is imported inside the functions that need it: a test file that does not compare with torch
can import this module on a machine without torch.
"""

import warnings

import numpy as np
import pytest

import minigrad as mg

F32, F64 = np.float32, np.float64
# Every tolerance of a comparison with torch: (rtol, atol) by kind of check and by the dtype of
# torch's result (integers and bools compare exactly). "default" is the tolerance of a comparison
# that names none: float32 sums in a different order than torch's kernels, float64 agrees to
# rounding. A kind of check whose ops round or accumulate differently has its own entry, named
# where it is used (assert_close(ours, theirs, "softmax"), tolerance("layer", dtype)).
TOLERANCES = {
    "default": {F32: (2e-4, 2e-4), F64: (1e-10, 1e-10)},
    # check(): the sweeps' one-line cases of tests/ops/, and F.normalize for every p
    "check": {F32: (1e-5, 1e-6), F64: (1e-10, 1e-12)},
    # the hypothesis sweep of every op of parity_cases.py (tests/ops/test_parity_table.py)
    "hypothesis table": {F32: (2e-4, 2e-4), F64: (1e-9, 1e-9)},
    # op_checks.check_against_torch and the nn.functional sweep (tests/nn/test_functional.py)
    "elementwise": {F32: (2e-5, 2e-5), F64: (1e-10, 1e-12)},
    # torch's polygamma(1) is within 5e-10 (ours within 6e-13 of mpmath)
    "trigamma": {F64: (1e-8, 1e-12)},
    "activations": {F32: (1e-5, 1e-5), F64: (1e-10, 1e-12)},
    # GELU over edge values: torch's float32 tanh saturates to -1 near x = -5 (gradient exactly 0
    # where the true one is ~-3e-7; minigrad's is the accurate one), hence atol 1e-6
    "gelu": {F32: (1e-6, 1e-6), F64: (1e-12, 1e-14)},
    "softmax": {F32: (2e-5, 2e-6), F64: (1e-12, 1e-13)},
    "losses": {F32: (3e-5, 3e-6), F64: (1e-10, 1e-12)},
    "losses with ignore_index": {F32: (1e-4, 1e-4), F64: (1e-6, 1e-6)},
    # layer_checks.assert_same: the losses' and distances' functions and modules
    "functions of layers": {F32: (2e-5, 2e-6), F64: (1e-10, 1e-12)},
    # a layer against its torch twin through a few ops (Linear, Embedding, attention, pooling)
    "layer": {F32: (1e-4, 1e-4), F64: (1e-5, 1e-5)},
    # F.linear on up to 4096 rows of 600 columns: the weight's gradient sums over every row
    "linear": {F32: (1e-5, 1e-4)},
    "linear gradient": {F32: (1e-5, 1e-3)},
    # rows picked (and renormalised by max_norm) from a pretrained float32 table
    "embedding rows": {F32: (1e-6, 1e-7)},
    # the Transformer-API sweep (tests/nn/test_transformer*.py) and the families it reaches
    "transformer": {F32: (1e-5, 1e-5), F64: (1e-10, 1e-10)},
    "transformer gradient": {F32: (1e-4, 1e-5), F64: (1e-9, 1e-10)},
    # LayerNorm's weight gradient for one feature in one row: x - mean is exactly 0 (minigrad's
    # gradient is 0); torch's float32 mean leaves ~1e-7 of rounding, times rstd = 1/sqrt(eps)
    "layer norm of one feature": {F32: (1e-4, 1e-4), F64: (1e-4, 1e-4)},
    # the recurrent layers and cells against torch's (tests/nn/test_rnn*.py, tests/ops/test_lstm.py)
    # layer, layout and cell; "one pass" the outputs and final states of a forward pass alone (and
    # the float32 GRU), "many steps" a float64 pass and its gradients back through every step,
    # "one recurrent step" a cell's step in float64; "lstm layer" LSTM against torch's in every
    # layout with lengths (float64 gradients through two layers and both directions: 1e-9)
    "recurrent": {F32: (1e-5, 1e-5), F64: (1e-10, 1e-10)},
    "recurrent, one pass": {F32: (1e-5, 1e-6), F64: (1e-12, 1e-13)},
    "recurrent, many steps": {F64: (1e-10, 1e-12)},
    "one recurrent step": {F64: (1e-12, 1e-14)},
    "lstm layer": {F32: (1e-5, 1e-5), F64: (1e-9, 1e-10)},
    # a float32 layer through a torch state dict and back: the same numbers, summed in another
    # order
    "state dict round trip": {F32: (1e-7, 1e-6)},
    # the in-place methods against torch's (tests/ops/test_inplace_methods.py): a few ops in a
    # row; one bound for both dtypes (an overwritten input's zero gradient is compared as float64
    # in the float32 cases too); the in-place unary methods in float64
    "in-place methods": {F32: (1e-6, 1e-6), F64: (1e-6, 1e-6)},
    "in-place unary": {F64: (1e-12, 0)},
    # binary_cross_entropy at p = 0 and 1: torch's clamped logs (-100) and gradients (+-1e12)
    "clamped logs": {F64: (1e-7, 0)},
    # kl_div(reduction='batchmean') and its module in float64, targets with a 0
    "kl_div": {F64: (1e-12, 1e-15)},
    # sinc's gradient next to 0 (cos(x)/x - sin(x)/x^2 cancels): torch's loses digits there, in
    # float64 too (minigrad's is finite and accurate, checked against it to this bound)
    "sinc gradient near 0": {F32: (1e-5, 1e-7), F64: (1e-5, 1e-7)},
    # convolution layers stacked (a conv net, an autoencoder) against torch's, forward
    # (tests/nn/test_conv.py)
    "conv layers": {F32: (1e-5, 1e-5), F64: (1e-10, 1e-10)},
    # what a module's hooks see and give back (tests/nn/test_hooks.py)
    "hooks": {F32: (1e-5, 1e-5), F64: (1e-12, 1e-12)},
    # random compositions of many ops: rounding adds up along the chain
    "compositions": {F32: (1e-4, 1e-4), F64: (1e-6, 1e-6)},
    # optimizer trajectories (SGD, Adam ...) and clip_grad_norm_
    "optimizer steps": {F32: (1e-4, 1e-4), F64: (1e-10, 1e-10)},
    "adaptive optimizers": {F32: (2e-5, 1e-6), F64: (1e-12, 1e-14)},
    # clip_grad_norm_'s clipped gradients for every norm type (the total: the same rtol, atol 0)
    "clip_grad_norm": {F32: (1e-6, 1e-7), F64: (1e-12, 1e-15)},
}
DTYPES = [np.float32, np.float64]
DTYPE_IDS = ["float32", "float64"]


def torch_dtype(dtype):
    """The torch dtype of the numpy dtype (np.float32 -> torch.float32)."""
    import torch

    return getattr(torch, np.dtype(dtype).name)


def to_numpy(value):
    """A minigrad Tensor, a torch tensor (detached), an array or a number -> a numpy array."""
    if isinstance(value, mg.Tensor):
        return value.numpy()
    if hasattr(value, "detach"):  # a torch tensor
        return value.detach().numpy()
    return np.asarray(value)


def plain(value):
    """A batch (or any nest of tensors, arrays, dicts, lists and tuples) as plain Python and numpy,
    whichever library made it, so a minigrad batch and a torch batch compare with ==."""
    if isinstance(value, mg.Tensor) or hasattr(value, "detach"):
        value = to_numpy(value)
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), value.tolist())
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(item) for item in value])
    return value


def tolerance(kind, dtype):
    """TOLERANCES[kind] for dtype as dict(rtol=, atol=), the form assert_close and numpy's
    assert_allclose take (0 and 0 for integers and bools)."""
    rtol, atol = TOLERANCES[kind].get(np.dtype(dtype).type, (0, 0))
    return dict(rtol=rtol, atol=atol)


def tolerances(tolerance, dtype):
    """(rtol, atol) of a tolerance: a number (both), dict(rtol=, atol=), the name of an entry of
    TOLERANCES, or None ("default"), the last two for dtype."""
    if tolerance is None or isinstance(tolerance, str):
        rtol, atol = TOLERANCES[tolerance or "default"].get(np.dtype(dtype).type, (0, 0))
        return rtol, atol
    if isinstance(tolerance, dict):
        return tolerance["rtol"], tolerance["atol"]
    return tolerance, tolerance


def assert_close(
    ours, theirs, tolerance=None, what="", *, equal_nan=True, scaled=False, same_dtype=False
):
    """ours (minigrad's result) has the shape of theirs (torch's, or a reference array) and its
    values within tolerance (see tolerances; by the dtype of theirs); NaN matches NaN
    unless equal_nan=False (numpy's rule). scaled=True
    multiplies the absolute tolerance by the largest finite |value| of theirs (when above 1), for
    results whose size varies by orders of magnitude. same_dtype=True also requires theirs'
    dtype."""
    ours, theirs = to_numpy(ours), to_numpy(theirs)
    if same_dtype:
        assert ours.dtype == theirs.dtype, f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    if ours.dtype.kind == "b" or theirs.dtype.kind == "b":  # no tolerance: True or False
        np.testing.assert_array_equal(ours, theirs, err_msg=what)
        return
    rtol, atol = tolerances(tolerance, theirs.dtype)
    if scaled:
        finite = np.abs(theirs[np.isfinite(theirs)]) if theirs.dtype.kind in "fc" else theirs
        atol = atol * max(1.0, float(np.abs(finite).max(initial=0.0)))
    np.testing.assert_allclose(
        ours, theirs, rtol=rtol, atol=atol, equal_nan=equal_nan, err_msg=what
    )


def run_both(call, arrays, dtype=None, *, sides=None, upstream=None, seed=0, grad=True):
    """call(side, *leaves) for minigrad's side and for torch's on the same arrays (cast to dtype
    when given; with grad, float ones are leaves that require grad), each output then backed with
    the same upstream gradient -> (ours, theirs), two namespaces of `out` and `leaves`.

    sides: what call gets first, (minigrad's, torch's); (mg, torch) unless given, e.g. the two
    functional modules, a layer and its torch twin, or two functions (call None: side(*leaves)).
    upstream: an array, a function of the output's shape giving one, or None for normal values
    drawn with seed. Each run's `value` and `grads` are its output and the leaves' gradients as
    numpy arrays (None where a leaf has none).
    """
    import torch

    sides = (mg, torch) if sides is None else sides
    arrays = [np.asarray(a) if dtype is None else np.asarray(a, dtype) for a in arrays]
    runs = []
    for side, make in zip(sides, (mg.tensor, torch.tensor)):
        leaves = [make(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        out = side(*leaves) if call is None else call(side, *leaves)
        if out.requires_grad:
            if upstream is None:
                upstream = np.random.default_rng(seed).standard_normal(tuple(out.shape))
            elif callable(upstream):
                upstream = upstream(tuple(out.shape))
            weights = np.asarray(upstream).astype(to_numpy(out).dtype)
            (out * make(weights)).sum().backward()
        runs.append(Run(out, leaves))
    return tuple(runs)


class Run:
    """One library's side of run_both: its output and input leaves (after backward)."""

    def __init__(self, out, leaves):
        self.out, self.leaves = out, leaves

    @property
    def value(self):
        return to_numpy(self.out)

    @property
    def grads(self):
        return [None if leaf.grad is None else to_numpy(leaf.grad) for leaf in self.leaves]


def assert_runs_match(ours, theirs, tolerance=None, names=None, gradients=None, **options):
    """Two runs of run_both agree: the output's dtype, shape and values, and the gradient of every
    input (a gradient torch leaves None is None or all zeros in ours). names: one per input, for
    the messages. tolerance as in assert_close (by default, by the dtype of torch's result);
    gradients: the gradients' tolerance where it differs; options go to assert_close (equal_nan,
    scaled)."""
    assert_close(ours.out, theirs.out, tolerance, "output", same_dtype=True, **options)
    gradients = tolerance if gradients is None else gradients
    names = names or [f"input {index}" for index in range(len(ours.leaves))]
    for name, leaf, torch_leaf in zip(names, ours.leaves, theirs.leaves):
        what = f"gradient of {name}"
        if torch_leaf.grad is None:
            assert leaf.grad is None or not np.any(leaf.grad.numpy()), what
            continue
        assert leaf.grad is not None, f"{what}: None, torch's is not"
        assert_close(leaf.grad, torch_leaf.grad, gradients, what, same_dtype=True, **options)


def assert_same_steps(ours, theirs, tolerance, dtype):
    """Two trajectories (an optimizer's, say): lists with one list of arrays per step. Each of
    ours is in dtype and within tolerance (as in assert_close) of theirs at the same place."""
    for step, (our_arrays, their_arrays) in enumerate(zip(ours, theirs, strict=True)):
        for index, (mine, reference) in enumerate(zip(our_arrays, their_arrays, strict=True)):
            assert mine.dtype == dtype, f"step {step}, parameter {index}: dtype {mine.dtype}"
            assert_close(mine, reference, tolerance, f"step {step}, parameter {index}")


# -- a layer and its torch twin ---------------------------------------------------------------


def copy_state_to_torch(ours, theirs, dtype=None):
    """Move the torch module theirs to dtype when given, then load the state dict of the minigrad
    module ours into it, by name (the two must have the same keys) -> theirs."""
    import torch

    if dtype is not None:  # before loading: a float32 module would round float64 values
        theirs = theirs.to(torch_dtype(dtype))
    state = ours.state_dict()
    assert set(state) == set(theirs.state_dict()), set(state) ^ set(theirs.state_dict())
    theirs.load_state_dict(
        {
            name: torch.from_numpy(np.array(value.numpy(), copy=True))
            for name, value in state.items()
        }
    )
    return theirs


def assert_same_parameter_grads(ours, theirs, tolerance=None):
    """The minigrad module ours and the torch module theirs have parameters of the same names, and
    each of ours has the gradient (and its dtype) of torch's of the same name, within tolerance (as
    in assert_close). A gradient torch leaves None is None or all zeros in ours; ours may be None
    only where torch's is all zeros."""
    torch_params = dict(theirs.named_parameters())
    assert sorted(name for name, _ in ours.named_parameters()) == sorted(torch_params)
    for name, parameter in ours.named_parameters():
        expected = torch_params[name].grad
        expected = np.zeros(parameter.shape) if expected is None else to_numpy(expected)
        if parameter.grad is None:
            assert not np.any(expected), f"{name}: no gradient, torch's is not all zeros"
            continue
        same_dtype = torch_params[name].grad is not None
        assert_close(parameter.grad, expected, tolerance, name, same_dtype=same_dtype)


def assert_layer_matches_torch(ours, theirs, x, tolerance, seed=4):
    """The minigrad layer ours and its torch twin theirs (holding the same weights) on the array x:
    the outputs, and under one random upstream gradient the input's and every parameter's
    gradients, agree to tolerance (relative and absolute)."""
    mine, torchs = run_both(lambda layer, leaf: layer(leaf), [x], sides=(ours, theirs), seed=seed)
    assert_runs_match(mine, torchs, tolerance)
    assert_same_parameter_grads(ours, theirs, tolerance)


# -- errors -----------------------------------------------------------------------------------


def raises_like_torch(ours_fn, torch_fn, must_mention=(), expected=None):
    """torch_fn raises; ours_fn must raise an exception that `except expected` catches (by default
    the type torch raised: minigrad's errors are also RuntimeErrors, as torch's), naming each of
    must_mention -> minigrad's exception."""
    with pytest.raises(Exception) as theirs:
        torch_fn()
    with pytest.raises(Exception) as ours:
        ours_fn()
    expected = type(theirs.value) if expected is None else expected
    assert isinstance(ours.value, expected), (
        f"torch raises {type(theirs.value).__name__} ({theirs.value}); "
        f"minigrad raises {type(ours.value).__mro__} ({ours.value}), "
        f"which `except {expected.__name__}` does not catch"
    )
    for word in must_mention:
        assert str(word) in str(ours.value), (word, str(ours.value))
    return ours.value


# Calls written once for both libraries, `call(B, *tensors)` with B = minigrad or torch (the sweeps
# of tests/ops/test_parity_sweep.py and the op families of tests/ops/), and their inputs:
# R(*shape) draws a float array, N(*values) makes a float64 one and I(*values) an int64 one.


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def _flatten(out):
    import torch

    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _flatten(item)]
    if (
        hasattr(out, "values")
        and hasattr(out, "indices")
        and not isinstance(out, (mg.Tensor, torch.Tensor))
    ):
        return [out.values, out.indices]
    return [out]


def _is_tensor(x):
    import torch

    return isinstance(x, (mg.Tensor, torch.Tensor))


def _make(B, array, grad):
    t = B.tensor(array)
    if grad and array.dtype.kind == "f":
        t.requires_grad_(True)
    return t


def check(call, *arrays, dtype="float64", grad=True, seed=0, tol=None):
    """Run call(B, *tensors) with B = minigrad and B = torch on arrays (float ones cast to dtype)
    and compare every output (value, shape, dtype) and the gradient of every float input.

    The outputs are backed by a random weighting of every float output (seeded by seed); they
    compare within TOLERANCES["check"] (a float32 output always), or within tol = (rtol, atol).
    """
    import torch

    arrays = [
        np.asarray(a).astype(dtype) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
        for a in arrays
    ]
    rtol, atol = tol or tolerances("check", dtype)
    ours_in = [_make(mg, a, grad) for a in arrays]
    theirs_in = [_make(torch, a, grad) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = _flatten(call(torch, *theirs_in))
        ours = _flatten(call(mg, *ours_in))
    assert len(ours) == len(theirs), f"{len(ours)} outputs, torch gives {len(theirs)}"
    for k, (o, t) in enumerate(zip(ours, theirs)):
        if not _is_tensor(t):
            o = o.item() if _is_tensor(o) and not isinstance(t, (tuple, list)) else o
            assert type(o) is type(t) or (isinstance(t, float) and isinstance(o, float)), (
                f"output {k}: {type(o).__name__}, torch gives {type(t).__name__}"
            )
            if isinstance(t, float):
                np.testing.assert_allclose(o, t, rtol=rtol, atol=atol)
            else:
                assert o == t, f"output {k}: {o!r}, torch gives {t!r}"
            continue
        assert _is_tensor(o), f"output {k} is {type(o).__name__}, torch gives a tensor"
        assert tuple(o.shape) == tuple(t.shape), (
            f"output {k}: shape {tuple(o.shape)}, torch {tuple(t.shape)}"
        )
        assert _dtype_name(o) == _dtype_name(t), (
            f"output {k}: dtype {_dtype_name(o)}, torch {_dtype_name(t)}"
        )
        float32 = _dtype_name(t) == "float32" and tol is None
        r, a = tolerances("check", np.float32) if float32 else (rtol, atol)
        tolerance = dict(rtol=r, atol=a)
        assert_close(o, t, tolerance, f"output {k} values")
    if not grad:
        return
    rng = np.random.default_rng(seed)
    pairs = [(o, t) for o, t in zip(ours, theirs) if _is_tensor(t) and t.requires_grad]
    assert all(o.requires_grad for o, t in pairs), (
        "an output does not require grad where torch's does"
    )
    if not pairs:
        return
    weights = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    loss_t = sum((t * torch.tensor(w, dtype=t.dtype)).sum() for (_, t), w in zip(pairs, weights))
    loss_o = sum(
        (o * mg.tensor(w.astype(_dtype_name(o)))).sum() for (o, _), w in zip(pairs, weights)
    )
    loss_t.backward()
    loss_o.backward()
    for k, (o, t) in enumerate(zip(ours_in, theirs_in)):
        if not t.requires_grad:
            continue
        tg = np.zeros(t.shape, dtype=dtype) if t.grad is None else t.grad.numpy()
        og = np.zeros(t.shape, dtype=dtype) if o.grad is None else o.grad.numpy()
        tolerance = dict(rtol=rtol, atol=atol)
        assert_close(og, tg, tolerance, f"input {k} gradient")


def R(*shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).uniform(low, high, size=shape)


def N(*values):
    return np.array(values, dtype=np.float64)


def I(*values):
    return np.array(values, dtype=np.int64)
