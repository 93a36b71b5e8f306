"""How an in-place change is made (minigrad/ops/inplace.py) and the version counter, checked
against PyTorch: a leaf that requires grad refuses it while recording, changes through views reach
the tensor they view, and a backward that needs a changed array raises. The in-place methods
themselves: tests/ops/test_inplace_methods.py; the random fills: tests/ops/test_random_fills.py."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))


def test_a_leaf_that_requires_grad_cannot_be_changed_in_place_while_recording():
    w = mg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.add_(1)
    with pytest.raises(RuntimeError, match="leaf"):
        w[0] = 2.0
    with mg.no_grad():  # the optimizer's way
        w.add_(1)
        w[0] = 5.0
    np.testing.assert_array_equal(w.numpy(), [5, 2, 2])


def test_the_issue_example_changing_data_behind_autograd_raises_instead_of_zero_grad():
    w = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (w * w).sum()
    w.data[...] = 0
    with pytest.raises(RuntimeError, match=r"modified by an in-place operation.*Mul"):
        loss.backward()


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_changes_through_data_are_seen_in_every_layout_and_nan_is_not_a_change(layout):
    """The fingerprint of a saved input reads values spread over the whole array, whatever its
    memory layout (here a view of a leaf); an unchanged NaN is no change, a value written over
    a sampled position is."""
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    base[1, 1] = np.nan
    w = mg.tensor(base, requires_grad=True)

    def view():
        # w * w keeps w for backward
        return {"contiguous": w * w, "transposed": w.T, "strided": w[::2, ::2]}[layout]

    assert view().numpy().flags.c_contiguous == (layout == "contiguous")
    v = view()
    (v * v).sum().backward()  # a NaN inside, untouched: backward runs
    v = view()
    loss = (v * v).sum()
    w.numpy()[0, 0] = 1000.0  # the first value of every layout: always in the fingerprint
    with pytest.raises(RuntimeError, match="was changed outside minigrad"):
        loss.backward()


@pytest.mark.parametrize(
    "change", ["add_", "setitem", "data=", "optimizer", "init", "load_state_dict"]
)
def test_every_in_place_path_bumps_the_version_and_backward_raises(change):
    layer = nn.Linear(3, 2)
    x = mg.ones(4, 3)
    loss = layer(x).tanh().sum()
    weight = layer.weight
    before = weight._version[0]
    if change == "add_":
        with mg.no_grad():
            weight.add_(1.0)
    elif change == "setitem":
        with mg.no_grad():
            weight[0, 0] = 7.0
    elif change == "data=":
        weight.data = np.zeros_like(weight.numpy())
    elif change == "optimizer":
        loss.backward(retain_graph=True)
        mg.optim.SGD(layer.parameters(), lr=0.1).step()
    elif change == "init":
        nn.init.normal_(weight)
    else:
        layer.load_state_dict({k: v.numpy() + 1 for k, v in layer.state_dict().items()})
    assert weight._version[0] > before
    with pytest.raises(RuntimeError, match="in-place"):
        loss.backward()


def test_in_place_on_a_saved_output_raises_like_torch():
    for lib in (mg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()  # exp saves its output
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="in-place|inplace"):
            y.sum().backward()


def test_in_place_on_an_unsaved_input_is_fine_like_torch():
    for lib in (mg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1.0
        z = h + 3.0  # add saves nothing
        h.mul_(2.0)
        z.sum().backward()
        np.testing.assert_array_equal(np.asarray(x.grad), [1.0, 1.0])


def test_dtype_rules_of_in_place_ops():
    x = mg.zeros(3, dtype=mg.int64)
    with pytest.raises(TypeError, match="float32.*int64"):
        x.add_(mg.ones(3))
    y = mg.zeros(3)
    y.add_(mg.ones(3, dtype=mg.float64))  # same kind: cast back, as torch
    assert y.dtype == mg.float32
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        mg.zeros(3).add_(mg.ones(2, 3))


def test_tensor_and_parameter_copy_the_callers_array_from_numpy_shares_it():
    array = np.ones(3, np.float32)
    for made in (mg.tensor(array), nn.Parameter(array), mg.Tensor(array)):
        made.data[0] = 5
    assert array[0] == 1
    shared = mg.from_numpy(array)
    shared.data[1] = 7
    assert array[1] == 7


def test_two_layers_built_from_one_array_are_not_tied():
    array = np.ones((2, 2), np.float32)
    first, second = nn.Parameter(array), nn.Parameter(array)
    optimizer = mg.optim.SGD([first, second], lr=1.0)
    (first.sum() + second.sum()).backward()
    optimizer.step()
    np.testing.assert_array_equal(first.numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(second.numpy(), np.zeros((2, 2)))


def test_requires_grad_attribute_on_an_integer_tensor_raises_like_requires_grad_():
    t = mg.tensor([1, 2])
    with pytest.raises(TypeError, match="int64"):
        t.requires_grad = True
    with pytest.raises(TypeError, match="int64"):
        t.requires_grad_()
    assert not t.requires_grad
    f = mg.tensor([1.0])
    f.requires_grad = True
    assert f.requires_grad and f.is_leaf


# -- in place through a view: the tensor it views changes too, as in torch ---------------------

# name -> f(lib, x, other): x (3, 4) non-leaf; changes a view of x in place; returns what the loss
# reads
VIEW_CASES = {
    "row of x": lambda lib, x, o: (x[0].mul_(3), x)[1],
    "column of x": lambda lib, x, o: (x[:, 1].add_(o[:, 2]), x)[1],
    "transposed row": lambda lib, x, o: (x.t()[1].zero_(), x)[1],
    "view then setitem": lambda lib, x, o: (x.view(4, 3).__setitem__((0, 0), 100.0), x)[1],
    "view of a view": lambda lib, x, o: (x.view(2, 6)[1:].mul_(o.view(2, 6)[:1]), x)[1],
    "slice of the transpose": lambda lib, x, o: (x.t()[1:].add_(o.t()[1:]), x)[1],
    "the view read afterwards": lambda lib, x, o: (lambda v: v.mul_(10) * v.sum())(x[:, 2]),
    "the base and the view both read": lambda lib, x, o: (lambda v: (v.add_(o[2]), x * v.sum())[1])(
        x[2]
    ),
    "flipped then changed": lambda lib, x, o: (lambda y: (y[0].mul_(2), y)[1])(x.flip(1)),
    "masked_fill_ on a view": lambda lib, x, o: (x[1:].masked_fill_(o[1:] > 0, -1.0), x * o)[1],
    "a buffer without grad": lambda lib, x, o: (lambda buf: (buf[1].add_(x[0] * o[1]), buf)[1])(
        lib.zeros(3, 4)
    ),
    # the other way: views taken earlier see a change of the tensor they view, or of a sibling view
    "a row, then the whole changed": lambda lib, x, o: (lambda w: (x.mul_(o), w)[1])(x[1]),
    "a flat view, then the whole changed": lambda lib, x, o: (
        lambda w: (x.add_(1.5), w * o.view(12))[1]
    )(x.view(12)),
    "the transpose, then a row changed": lambda lib, x, o: (lambda w: (x[0].mul_(10), w)[1])(x.t()),
    "a row, then the same row changed": lambda lib, x, o: (lambda w: (x[1].mul_(o[1]), w)[1])(x[1]),
    "a row, then setitem on the whole": lambda lib, x, o: (
        lambda w: (x.__setitem__(1, o[2]), w)[1]
    )(x[1]),
    "an expanded row, then the row changed": lambda lib, x, o: (
        lambda w: (x[0].mul_(2), w + x.sum())[1]
    )(x[0:1].expand(2, 4)),
    "two views, one changed": lambda lib, x, o: (lambda w, u: (x[2].add_(o[0]), w * u.sum())[1])(
        x.view(4, 3), x[:, 1]
    ),
}


def run_view_case(lib, case):
    base = lib.tensor(A, requires_grad=True)
    other = lib.tensor(B, requires_grad=True)
    out = VIEW_CASES[case](lib, base * 1.0, other)
    weights = lib.tensor(
        np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)) * 0.1 + 1
    )
    (out * weights).sum().backward()
    return np.asarray(out.detach()), [
        np.zeros_like(A) if t.grad is None else np.asarray(t.grad) for t in (base, other)
    ]


@pytest.mark.parametrize("case", sorted(VIEW_CASES))
def test_in_place_changes_of_views_reach_the_tensor_they_view_as_in_torch(case):
    ours, our_grads = run_view_case(mg, case)
    theirs, their_grads = run_view_case(torch, case)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    for got, want in zip(our_grads, their_grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_view_of_a_leaf_that_requires_grad_cannot_be_changed_in_place_while_recording():
    w = mg.tensor(A, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="a view of a leaf tensor that requires grad cannot be changed in place"
    ):
        w[0].mul_(2)
    with mg.no_grad():
        w[0].mul_(2)  # as initialisers do: written into w's own array
    np.testing.assert_array_equal(w.numpy()[0], A[0] * 2)


def test_views_without_a_graph_still_write_into_the_shared_array():
    x = mg.tensor(A.copy())
    row = x[1]
    row.add_(1.0)
    np.testing.assert_array_equal(x.numpy()[1], A[1] + 1)
    assert row._node is None and x._node is None  # no graph was made


@pytest.mark.parametrize(
    "change",
    [lambda e: e.fill_(9.0), lambda e: e.mul_(5), lambda e: e.zero_(), lambda e: e.add_(1.5)],
)
@pytest.mark.parametrize("recording", [False, True])
def test_in_place_on_a_single_element_writes_into_the_tensor_as_torch(change, recording):
    results = []
    for lib in (mg, torch):
        base = lib.tensor(A, requires_grad=recording)
        x = base * 1.0 if recording else base
        change(x[1, 2])
        if recording:
            (x * x).sum().backward()
        results.append((np.asarray(x.detach()), None if not recording else np.asarray(base.grad)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    if recording:
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_flip_returns_a_copy_as_torch():
    x = mg.tensor(A.copy())
    flipped = x.flip(0)
    flipped[0].mul_(2)
    np.testing.assert_array_equal(x.numpy(), A)  # torch's flip copies: x is as it was
    np.testing.assert_array_equal(flipped.numpy()[0], A[-1] * 2)


def test_a_product_with_a_constant_keeps_only_what_its_gradient_needs():
    """y[2] * 2 needs only the 2 for its gradient: changing y afterwards is fine, as in torch."""
    for lib in (mg, torch):
        base = lib.tensor(A, requires_grad=True)
        y = base * 1.0
        y[0].copy_(y[2] * 2)
        (y * y).sum().backward()
        expected = 2 * A.copy()
        expected[0] = 0
        expected[2] = 2 * A[2] + 2 * (2 * A[2]) * 2
        np.testing.assert_allclose(np.asarray(base.grad), expected, rtol=1e-12)


@pytest.mark.parametrize(
    "change",
    [
        lambda y: y[5:6].fill_(7),  # a view taken of a tensor that needs no grad
        lambda y: y.view(8, 8).__setitem__((0, 1), 5),
        lambda y: y[5:6].mul_(3),
    ],
    ids=["fill_ of a slice", "setitem through view()", "mul_ of a slice"],
)
@pytest.mark.parametrize("under_no_grad", [False, True])
def test_a_view_taken_while_nothing_records_shares_its_base_version(change, under_no_grad):
    """torch raises for each: the multiplication saved y, and y changed through a view made while
    no graph was recorded (the view of a tensor that needs no grad, or under no_grad)."""
    w = mg.ones(64, requires_grad=True)
    y = mg.ones(64)
    loss = (w * y).sum()
    if under_no_grad:
        with mg.no_grad():
            change(y)
    else:
        change(y)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()
