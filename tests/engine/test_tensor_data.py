"""`Tensor.data` as torch has it: a tensor outside the graph that shares the array, so the in-place
methods torch programs call on it (`p.data.add_(p.grad, alpha=-lr)`, `w.data.normal_(0, 0.02)`,
`w.data.std()`) change or read the tensor itself. Each case runs in minigrad and in torch from the
same values; `.numpy()` is the way to the array. minigrad keeps one difference on purpose: `.data`
shares the version counter, so a backward that saved the tensor refuses after a change through
it (torch returns a gradient computed from the changed values)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")

START = np.array([[0.5, -1.25, 2.0], [3.0, -0.75, 0.25]])
OTHER = np.array([[1.0, 2.0, -1.0], [0.5, -2.0, 4.0]])

# (what a program does through .data) -> the tensor's values afterwards, or what it reads
CHANGES = {
    "add_ with alpha": lambda p, g: p.data.add_(g, alpha=-0.1),
    "sub_": lambda p, g: p.data.sub_(g),
    "mul_ by a number": lambda p, g: p.data.mul_(0.5),
    "div_ by a tensor": lambda p, g: p.data.div_(g),
    "zero_": lambda p, g: p.data.zero_(),
    "fill_": lambda p, g: p.data.fill_(3.0),
    "copy_": lambda p, g: p.data.copy_(g),
    "clamp_": lambda p, g: p.data.clamp_(-1.0, 1.0),
    "addcmul_": lambda p, g: p.data.addcmul_(g, g, value=0.25),
    "addcdiv_": lambda p, g: p.data.addcdiv_(g, g * g + 1, value=-0.5),
    "lerp_": lambda p, g: p.data.lerp_(g, 0.1),
    "clamp_min_": lambda p, g: p.data.clamp_min_(0.3),
    "index assignment": lambda p, g: p.data.__setitem__((0, slice(1, None)), 0.0),
    "a row of a row": lambda p, g: p.data[1].mul_(-1),
    "operator -=": lambda p, g: p.data.__isub__(g * 0.5),
}

READS = {
    "std": lambda d: d.std(),
    "mean over a dim": lambda d: d.mean(dim=0),
    "norm": lambda d: d.norm(),
    "abs max": lambda d: d.abs().max(),
    "sum keepdim": lambda d: d.sum(dim=1, keepdim=True),
    "clone times two": lambda d: d.clone() * 2,
}


def _parameter(library, values=START):
    return library.nn.Parameter(library.tensor(values.copy()))


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_through_data_changes_the_parameter_as_in_torch(change):
    results = []
    for library in (mg, torch):
        p = _parameter(library)
        CHANGES[change](p, library.tensor(OTHER.copy()))
        assert p.requires_grad and p.is_leaf
        results.append(p.detach().numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-15, atol=0)
    assert not np.array_equal(results[0], START)  # it did change


@pytest.mark.parametrize("read", READS)
def test_reading_through_data_gives_torchs_numbers(read):
    ours = READS[read](_parameter(mg).data)
    theirs = READS[read](_parameter(torch).data)
    assert isinstance(ours, mg.Tensor) and not ours.requires_grad
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14, atol=0)


def test_data_is_a_plain_tensor_sharing_memory_without_a_graph():
    p = _parameter(mg)
    d = p.data
    assert type(d) is mg.Tensor and not isinstance(d, nn.Parameter)
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.shape == p.shape and d.dtype == p.dtype
    assert np.shares_memory(d.numpy(), p.numpy()) and d.numpy() is p.numpy()
    d.requires_grad_()  # switching it on for the data tensor leaves the parameter alone
    assert p.requires_grad and p.data is not d and not p.data.requires_grad

    y = p * 2  # a result's .data is outside the graph too
    assert y.grad_fn is not None and y.data.grad_fn is None and not y.data.requires_grad
    ids = mg.tensor([3, 1, 2])
    assert ids.data.dtype == mg.int64 and ids.data.tolist() == [3, 1, 2]


def test_random_fills_through_data_fill_the_parameter():
    """torch and minigrad draw different numbers; what is drawn has the asked-for law."""
    mg.manual_seed(0)
    w = nn.Parameter(mg.zeros(200, 100))
    w.data.normal_(0, 0.02)
    assert abs(float(w.std()) - 0.02) < 0.001 and abs(float(w.mean())) < 0.001
    w.data.uniform_(-0.1, 0.1)
    assert -0.1 <= float(w.min()) and float(w.max()) <= 0.1 and float(w.std()) > 0.05


def test_the_update_of_a_hand_written_sgd_matches_torchs_optimizer():
    """word_language_model's own step: after backward, p.data.add_(p.grad, alpha=-lr)."""
    results = []
    for library in (mg, torch):
        p = _parameter(library)
        for _ in range(3):
            loss = (p * p * library.tensor(OTHER)).sum()
            p.grad = None
            loss.backward()
            p.data.add_(p.grad, alpha=-0.05)
        results.append(p.detach().numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-15, atol=0)


def test_a_backward_that_saved_the_tensor_refuses_after_a_change_through_data():
    p = _parameter(mg)
    loss = (p * p).sum()  # Mul saves p
    p.data.add_(1.0)
    with pytest.raises(RuntimeError, match=r"modified by an in-place operation.*Mul.*version"):
        loss.backward()
    y = p * 3
    out = (y * y).sum()  # through a result's .data as well
    y.data.zero_()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        out.backward()
    fresh = (p * p).sum()  # after the change, a new forward is fine
    fresh.backward()
    np.testing.assert_allclose(p.grad.numpy(), 2 * (START + 1))


def test_assigning_data_replaces_the_values_and_keeps_the_parameter():
    for library in (mg, torch):
        p = _parameter(library)
        model_param = p
        p.data = library.ones(4, dtype=library.float64)  # another shape is allowed, as in torch
        assert model_param is p and p.shape == (4,) and p.requires_grad
        assert p.detach().numpy().tolist() == [1.0, 1.0, 1.0, 1.0]


def test_data_of_a_view_writes_into_the_base():
    p = _parameter(mg)
    row = p[1]
    row.data.fill_(9.0)
    np.testing.assert_array_equal(p.numpy()[1], [9.0, 9.0, 9.0])
    np.testing.assert_array_equal(p.numpy()[0], START[0])


@settings(max_examples=40, deadline=None)
@given(
    values=hnp.arrays(
        np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=st.floats(-1e3, 1e3)
    ),
    alpha=st.floats(-10, 10),
)
def test_add_with_alpha_through_data_is_the_array_update(values, alpha):
    p = nn.Parameter(mg.tensor(values))
    g = mg.tensor(values[::-1].copy() + 1.0)
    expected = values + alpha * g.numpy()
    p.data.add_(g, alpha=alpha)
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-12, atol=1e-9)


def test_data_assignment_names_what_it_needs():
    p = _parameter(mg)
    with pytest.raises(TypeError, match="numpy array or a Tensor; got list"):
        p.data = [1.0, 2.0]
    with pytest.raises(TypeError, match="float"):
        p.data = mg.tensor([1, 2])  # a parameter needs floats


def test_data_and_detach_of_an_inference_tensor_are_inference_tensors_as_in_torch():
    for library in (mg, torch):
        with library.inference_mode():
            made = library.ones(2)
        assert made.data.is_inference() and made.detach().is_inference()
        assert not library.ones(2).data.is_inference()
