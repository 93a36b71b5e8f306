"""In-place changes and the version counter, checked against PyTorch: x[idx] = v, add_, mul_ ...
give torch's values and gradients, and a backward that needs a changed array raises."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from op_checks import assert_clear_error
from parity import R

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
ROW = RNG.standard_normal(4)

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
    np.testing.assert_allclose(ours, theirs.astype(dtype), rtol=1e-6, atol=1e-6)
    for got, want in zip(our_grads, their_grads):
        # an input whose every value was overwritten gets grad None here, zeros in torch
        got = np.zeros_like(A) if got is None else got
        want = np.zeros_like(A) if want is None else want
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


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


SIZE = 40_000


FILLS = {  # name -> (fill, mean, variance, low, high) of the distribution drawn
    "uniform_": (lambda x, g: x.uniform_(-2, 3, generator=g), 0.5, 25 / 12, -2, 3),
    "normal_": (lambda x, g: x.normal_(1.5, 0.5, generator=g), 1.5, 0.25, -np.inf, np.inf),
    "exponential_": (lambda x, g: x.exponential_(4.0, generator=g), 0.25, 1 / 16, 0, np.inf),
    "bernoulli_": (lambda x, g: x.bernoulli_(0.3, generator=g), 0.3, 0.21, 0, 1),
    "random_(from, to)": (lambda x, g: x.random_(-3, 5, generator=g), 0.5, 63 / 12, -3, 4),
    "random_(to)": (lambda x, g: x.random_(10, generator=g), 4.5, 99 / 12, 0, 9),
}


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
@pytest.mark.parametrize("name", list(FILLS))
def test_random_fills_draw_the_right_distribution(name, dtype):
    fill, mean, variance, low, high = FILLS[name]
    mg.manual_seed(1234)
    x = mg.zeros(SIZE, dtype=dtype)
    assert fill(x, None) is x
    values = x.numpy()
    assert values.dtype == dtype and values.min() >= low and values.max() <= high
    # the sample mean lies within 5 standard errors; the variance within 5% (SIZE draws)
    assert abs(values.mean() - mean) < 5 * np.sqrt(variance / SIZE)
    assert abs(values.var() - variance) < 0.05 * variance
    if name.startswith(("random_", "bernoulli_")):
        assert (values == np.round(values)).all()


@pytest.mark.parametrize("name", list(FILLS))
def test_random_fills_repeat_from_the_seed_and_from_a_generator(name):
    fill = FILLS[name][0]
    mg.manual_seed(7)
    first = fill(mg.zeros(50), None).numpy()
    mg.manual_seed(7)
    np.testing.assert_array_equal(fill(mg.zeros(50), None).numpy(), first)
    mg.manual_seed(7)
    state = mg.get_rng_state()
    ours = fill(mg.zeros(50), mg.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(fill(mg.zeros(50), mg.Generator().manual_seed(3)).numpy(), ours)
    # generator= left the global one
    np.testing.assert_array_equal(mg.get_rng_state().numpy(), state.numpy())


def test_random_fills_of_a_view_write_into_its_base_and_bump_its_version():
    x = mg.zeros(4, 3)
    row = x[1]
    row.uniform_(5, 6)
    x.t()[2].exponential_()
    assert (
        (x.numpy()[1, :2] >= 5).all()
        and (x.numpy()[:, 2] > 0).all()
        and (x.numpy()[[0, 2, 3], :2] == 0).all()
    )
    assert row._version[0] == 2  # a view shares its base's counter, recorded or not (torch: 2)


def test_a_random_fill_while_recording_cuts_the_old_history():
    """h = x * 2; h.uniform_(): the gradient of x through h is 0, as in torch."""
    x = mg.tensor(R(3), requires_grad=True)
    h = x * 2
    h.normal_()
    (h * 3 + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


def test_random_and_bernoulli_on_ints_and_the_full_range_of_random_():
    mg.manual_seed(0)
    ints = mg.zeros(10_000, dtype=mg.int64).random_(3)
    assert set(np.unique(ints.numpy())) == {0, 1, 2}
    whole = mg.zeros(10_000, dtype=mg.float32).random_()
    assert whole.numpy().min() >= 0 and whole.numpy().max() <= 2**24 and whole.numpy().max() > 2**23
    bits = mg.zeros(10_000, dtype=mg.int64).bernoulli_(mg.tensor([0.0, 1.0]).repeat(5_000))
    np.testing.assert_array_equal(bits.numpy(), np.tile([0, 1], 5_000))


def test_randint_like_takes_the_shape_and_dtype_and_draws_from_its_range():
    mg.manual_seed(5)
    like = mg.randint_like(mg.zeros(2, 3, dtype=mg.float64), 4)
    assert (
        like.shape == (2, 3)
        and like.dtype == mg.float64
        and set(like.numpy().ravel()) <= {0, 1, 2, 3}
    )
    spread = mg.randint_like(mg.zeros(20_000, dtype=mg.int64), -2, 2, dtype=mg.int32)
    assert spread.dtype == mg.int32 and sorted(np.unique(spread.numpy())) == [-2, -1, 0, 1]
    assert abs(spread.numpy().mean() + 0.5) < 5 * np.sqrt(1.25 / 20_000)
    mg.manual_seed(5)
    np.testing.assert_array_equal(
        mg.randint_like(mg.zeros(2, 3, dtype=mg.float64), 4).numpy(), like.numpy()
    )
    torch_like = torch.randint_like(torch.zeros(2, 3, dtype=torch.float64), 4)
    assert torch_like.dtype == torch.float64 and tuple(torch_like.shape) == like.shape


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
    torch = pytest.importorskip("torch")
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
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_writing_into_an_expanded_view_says_what_to_do():
    expanded = mg.zeros(2).expand(3, 2)
    with pytest.raises(RuntimeError, match="read-only.*clone"):
        expanded[0] = 7


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "uniform_ of ints": (lambda: mg.zeros(3, dtype=mg.int64).uniform_(), DTypeError, "int64"),
    "uniform_ from > to": (lambda: mg.zeros(3).uniform_(2, 1), ArgumentError, "from=2, to=1"),
    "normal_ negative std": (lambda: mg.zeros(3).normal_(0, -1), ArgumentError, "-1"),
    "normal_ tensor mean": (lambda: mg.zeros(3).normal_(mg.zeros(3)), TypeError, "Tensor"),
    "exponential_ rate 0": (lambda: mg.zeros(3).exponential_(0), ArgumentError, "positive"),
    "bernoulli_ p above 1": (lambda: mg.zeros(3).bernoulli_(1.5), ArgumentError, "1.5"),
    "bernoulli_ p of another shape": (
        lambda: mg.zeros(3).bernoulli_(mg.zeros(2)),
        ShapeError,
        "(2,)",
    ),
    "random_ from >= to": (lambda: mg.zeros(3).random_(4, 4), ArgumentError, "from=4, to=4"),
    "random_ float bound": (lambda: mg.zeros(3).random_(0.5), TypeError, "0.5"),
    "randint_like low >= high": (
        lambda: mg.randint_like(mg.zeros(3), 5, 1),
        ArgumentError,
        "low=5, high=1",
    ),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
