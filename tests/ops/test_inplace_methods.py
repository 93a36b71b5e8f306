"""The in-place methods of minigrad/ops/inplace_methods.py against PyTorch: x[idx] = v (setitem),
add_, mul_, copy_, masked_fill_, addcmul_, lerp_, clamp_min_ ... and the in-place unary methods
(exp_, log_, relu_ ...) give torch's values and gradients in float32 and float64; setitem without
a graph writes into the same array; bad shapes and read-only views named.
"""

import numpy as np
import pytest

import minigrad as mg
from parity import assert_close

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))  # the tensor changed in place
B = RNG.standard_normal((3, 4))  # the operand, which requires grad too


# name -> f(lib, x, other) that changes x (a non-leaf) in place with `other` (requires grad) and
# returns x
CASES = {
    "add_": lambda lib, x, o: x.add_(o),
    "add_ alpha": lambda lib, x, o: x.add_(o, alpha=0.5),
    "sub_": lambda lib, x, o: x.sub_(o),
    "mul_": lambda lib, x, o: x.mul_(o),
    "div_": lambda lib, x, o: x.div_(o * o + 1),
    "+=": lambda lib, x, o: x.__iadd__(o),
    "*=": lambda lib, x, o: x.__imul__(o),
    "copy_": lambda lib, x, o: x.copy_(o),
    "setitem slice": lambda lib, x, o: x.__setitem__((slice(None), slice(1, 3)), o[:, :2]) or x,
    "setitem int": lambda lib, x, o: x.__setitem__(1, o[0]) or x,
    "setitem int array": lambda lib, x, o: x.__setitem__(lib.tensor([0, 2]), o[:2]) or x,
    "setitem bool mask": lambda lib, x, o: (
        x.__setitem__(x > 0, o[o > -10][: int((x > 0).sum())]) or x
    ),
    "setitem number": lambda lib, x, o: x.__setitem__((0, 0), 5.0) or x * o,
    "setitem broadcast row": lambda lib, x, o: x.__setitem__(slice(0, 2), o[0]) or x,
    "masked_fill_": lambda lib, x, o: x.masked_fill_(o > 0, 2.0) * o,
    "zero_": lambda lib, x, o: x.zero_() + o,
    "fill_": lambda lib, x, o: x.fill_(1.5) * o,
    "addcmul_": lambda lib, x, o: x.addcmul_(o, x.detach() + 1, value=0.5),
    "addcdiv_": lambda lib, x, o: x.addcdiv_(o, o * o + 1, value=-2),
    "lerp_ number": lambda lib, x, o: x.lerp_(o, 0.25),
    "lerp_ tensor": lambda lib, x, o: x.lerp_(o, o.detach().sigmoid()),
    "clamp_min_": lambda lib, x, o: x.clamp_min_(0.1) * o,
    "clamp_max_": lambda lib, x, o: x.clamp_max_(0.1) * o,
}


def run(lib, case, dtype):
    base = lib.tensor(A.astype(dtype), requires_grad=True)
    other = lib.tensor(B.astype(dtype), requires_grad=True)
    x = base * 1.0  # a non-leaf: in-place changes are recorded in its graph
    out = CASES[case](lib, x, other)
    (out * lib.tensor(np.arange(12.0).reshape(3, 4).astype(dtype))).sum().backward()
    grads = [None if t.grad is None else np.asarray(t.grad) for t in (base, other)]
    return np.asarray(out.detach()), grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_in_place_ops_match_torch_values_and_gradients(case, dtype):
    ours, our_grads = run(mg, case, dtype)
    theirs, their_grads = run(torch, case, dtype)
    assert_close(ours, theirs.astype(dtype), "in-place methods", "value")
    for got, want in zip(our_grads, their_grads):
        # an input whose every value was overwritten gets grad None here, zeros in torch
        got = np.zeros_like(A) if got is None else got
        want = np.zeros_like(A) if want is None else want
        assert_close(got, want, "in-place methods", "gradient")


def test_setitem_without_grad_writes_into_the_same_array():
    x = mg.zeros(2, 3)
    array = x.numpy()
    x[0, 1:] = mg.tensor([1.0, 2.0])
    x[x > 1.5] = -1.0
    assert x.numpy() is array
    np.testing.assert_array_equal(array, [[0, 1, -1], [0, 0, 0]])


def test_setitem_errors_name_the_shapes():
    x = mg.zeros(2, 3)
    with pytest.raises(ValueError, match=r"shape \(4,\).*\(3,\)"):
        x[0] = mg.zeros(4)
    with pytest.raises(IndexError, match="shape"):
        x[5] = 1.0


@pytest.mark.parametrize(
    "name, domain",
    [
        ("exp", None),
        ("log", (0.1, 3)),
        ("sqrt", (0.1, 3)),
        ("rsqrt", (0.1, 3)),
        ("tanh", None),
        ("sigmoid", None),
        ("relu", None),
        ("neg", None),
        ("abs", None),
        ("square", None),
        ("reciprocal", (0.5, 3)),
    ],
)
def test_in_place_unary_methods_match_torch(name, domain):
    low, high = domain or (-2, 2)
    values = np.random.default_rng(len(name)).uniform(low, high, (3, 4))
    results = []
    for lib in (mg, torch):
        base = lib.tensor(values, requires_grad=True)
        x = base * 1.0
        out = getattr(x, f"{name}_")()
        assert out is x
        (x * lib.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
        results.append((np.asarray(x.detach()), np.asarray(base.grad)))
    assert_close(results[0][0], results[1][0], "in-place unary", "value")
    assert_close(results[0][1], results[1][1], "in-place unary", "gradient")


def test_writing_into_an_expanded_view_says_what_to_do():
    expanded = mg.zeros(2).expand(3, 2)
    with pytest.raises(RuntimeError, match="read-only.*clone"):
        expanded[0] = 7
