"""The conversions (minigrad/ops/conversion.py: casts with .to, .double, .type_as ..., clone,
contiguous, and numel, element_size, is_floating_point) against torch: values, dtypes and the
gradient, which comes back in the input's dtype; a conversion that changes nothing returns the
tensor itself, as torch's does.
"""

import numpy as np
import pytest

import minigrad as mg
from parity import I, R, check

torch = pytest.importorskip("torch")


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
CONVERSIONS = {
    "to float64": (lambda B, x: x.to(B.float64), [R(2, 3)]),
    "to float32": (lambda B, x: x.to(B.float32), [R(2, 3)]),
    "double then float": (lambda B, x: x.double().float() * 2, [R(3)]),
    "to int64 (no gradient)": (lambda B, x: x.to(B.int64), [R(2, 3) * 3]),
    "to another tensor's dtype": (lambda B, x: x.to(B.zeros(1, dtype=B.float64)), [R(4)]),
    "to the cpu and a dtype": (lambda B, x: x.to("cpu", B.float64), [R(2, 2)]),
    "to dtype= copy=True": (lambda B, x: x.to(dtype=x.dtype, copy=True), [R(3)]),
    "type_as an int tensor": (lambda B, x, y: x.type_as(y), [R(2, 3) * 3, I(1)]),
    "type_as a float64 tensor": (lambda B, x, y: x.type_as(y.double()), [R(2, 3), I(1)]),
    "long of a float": (lambda B, x: x.long(), [R(5) * 4]),
    "clone": (lambda B, x: B.clone(x) * 3, [R(2, 3)]),
    "clone of ints": (lambda B, x: x.clone(), [I(1, 2, 3)]),
    "contiguous of a transpose": (lambda B, x: x.t().contiguous(), [R(3, 4)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_conversions_match_torch(name, dtype):
    call, arrays = CONVERSIONS[name]
    check(call, *arrays, dtype=dtype)


def test_a_conversion_that_changes_nothing_is_the_tensor_itself_as_in_torch():
    for B in (mg, torch):
        x = B.ones(2, 3)
        assert x.to(B.float32) is x and x.to("cpu") is x and x.type_as(x) is x
        assert x.contiguous() is x and x.to(B.float32, copy=True) is not x
        assert x.t().contiguous() is not x and x.clone() is not x


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(), (2, 3), (4, 0)])
def test_numel_element_size_and_is_floating_point_are_torchs(shape, dtype):
    array = np.zeros(shape, dtype)
    facts = [
        (B.numel(x), x.numel(), x.element_size(), x.is_floating_point(), B.is_floating_point(x))
        for B, x in ((mg, mg.tensor(array)), (torch, torch.tensor(array)))
    ]
    assert facts[0] == facts[1]


def test_casts():
    x = mg.tensor([1.7, -2.2], requires_grad=True)
    d = x.double()
    assert d.dtype == np.float64
    (d * 2).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(x.long().numpy(), [1, -2])
    assert x.to(np.float32) is x
    assert x.long().float().dtype == np.float32
