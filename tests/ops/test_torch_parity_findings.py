"""Cases where an independent PyTorch-parity suite or the hardening audit found minigrad wrong or
refusing valid input: each compared with torch 2.13 on the same input (values, gradients, or
the kind of error)."""

import numpy as np
import pytest
from parity import assert_close, raises_like_torch

import minigrad as mg
import minigrad.nn.functional as F

torch = pytest.importorskip("torch")


def test_a_tuple_inside_an_index_is_a_sequence_as_a_list_is():
    x = np.arange(2 * 3 * 4 * 5 * 6 * 7, dtype=np.float32).reshape(2, 3, 4, 5, 6, 7)
    for index in [
        (1, (2, 1, 0), None, [0, 1, 2], (2, 1, 0), slice(None)),
        (1, (2, 1, 0), None, slice(1, 3), (2, 1, 0), 2),
        (0, (1,), Ellipsis, (3, 0)),
    ]:
        leaf = mg.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        ours, expected = leaf[index], theirs[index]
        assert_close(ours, expected, what=str(index))
        upstream = np.random.default_rng(0).standard_normal(tuple(expected.shape))
        ours.backward(mg.tensor(upstream.astype(np.float32)))
        expected.backward(torch.tensor(upstream, dtype=torch.float32))
        assert_close(leaf.grad, theirs.grad, what=f"gradient of {index}")


@pytest.mark.parametrize("value", [1.0, 0.0])
def test_a_0d_float_tensor_is_no_index(value):
    raises_like_torch(
        lambda: mg.arange(5)[mg.tensor(value)],
        lambda: torch.arange(5)[torch.tensor(value)],
        must_mention=["float32"],
    )


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, float("inf"), 0, -1, -2, float("-inf")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalize_for_every_p_torch_takes(p, dtype):
    """Rows with zeros and an all-zero row: the eps floor is on the norm, as torch puts it."""
    x = np.array([[1.0, -2.0, 0.5], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0], [1e-3, 2.0, -4.0]], dtype)
    weights = np.arange(12.0, dtype=dtype).reshape(4, 3)
    leaf, theirs = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, expected = F.normalize(leaf, p=p, dim=1), torch.nn.functional.normalize(theirs, p=p)
    (ours * mg.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    tolerance = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    assert_close(ours, expected, tolerance, scaled=True)
    assert_close(leaf.grad, theirs.grad, tolerance, scaled=True)


def test_linspace_refuses_bool_as_torch_does():
    raises_like_torch(
        lambda: mg.linspace(0, 1, 5, dtype=mg.bool),
        lambda: torch.linspace(0, 1, 5, dtype=torch.bool),
        must_mention=["bool"],
    )


def test_topk_ties_go_to_the_lowest_index():
    """docs/coming-from-pytorch.md promises ties to the lowest index (torch leaves them open)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.integers(0, 3, size=(4, 9)).astype(np.float32)
        if rng.random() < 0.3:
            x[0, 3] = np.nan  # NaN counts as the largest, as in torch
        k = int(rng.integers(0, 10))
        key = np.where(np.isnan(x), np.inf, x)
        for largest in (True, False):
            got = mg.tensor(x).topk(k, largest=largest)
            expected = np.argsort(-key if largest else key, axis=1, kind="stable")[:, :k]
            np.testing.assert_array_equal(got.indices.numpy(), expected)
            np.testing.assert_array_equal(got.values.numpy(), np.take_along_axis(x, expected, 1))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("value", [0xFFFFFFFF, 0xFF, -1, 2**40 + 5, 7])
@pytest.mark.parametrize("method", ["__or__", "__and__", "__xor__", "__ror__", "__rxor__"])
def test_bitwise_ops_read_a_large_python_int_by_its_bits(dtype, value, method):
    ours = getattr(mg.tensor([1, 2, 200], dtype=getattr(mg, dtype)), method)(value)
    theirs = getattr(torch.tensor([1, 2, 200], dtype=getattr(torch, dtype)), method)(value)
    assert_close(ours, theirs, same_dtype=True)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "shape, pad",
    [
        ((1, 2, 12), (-2, 3)),
        ((1, 2, 12), (3, -2)),
        ((1, 2, 12), (-1, -1)),
        ((1, 2, 4, 6), (1, -2, -1, 2)),
        ((2, 3, 5, 6), (-1, 3, 1, 3)),
        ((2, 3, 5, 6), (2, -1, -2, 0)),
    ],
)
def test_negative_padding_crops_in_every_mode(mode, shape, pad):
    x = np.random.default_rng(1).standard_normal(shape)
    leaf, theirs = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, expected = F.pad(leaf, pad, mode=mode), torch.nn.functional.pad(theirs, pad, mode=mode)
    assert_close(ours, expected)
    upstream = np.random.default_rng(2).standard_normal(tuple(expected.shape))
    ours.backward(mg.tensor(upstream))
    expected.backward(torch.tensor(upstream))
    assert_close(leaf.grad, theirs.grad)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_padding_that_leaves_nothing_is_refused(mode):
    raises_like_torch(
        lambda: F.pad(mg.ones(1, 2, 5), (-2, -3), mode=mode),
        lambda: torch.nn.functional.pad(torch.ones(1, 2, 5), (-2, -3), mode=mode),
        must_mention=["(-2, -3)"],
    )


def test_an_unknown_padding_mode_raises_what_torch_raises():
    raises_like_torch(
        lambda: F.pad(mg.ones(1, 2, 3), (1, 1), mode="typo"),
        lambda: torch.nn.functional.pad(torch.ones(1, 2, 3), (1, 1), mode="typo"),
        must_mention=["typo"],
    )


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_max_pool2d_takes_integer_inputs_as_torch_does(dtype):
    rng = np.random.default_rng(0)
    for trial in range(12):
        x = rng.integers(0, 5 if trial % 2 else 200, size=(2, 3, 7, 6)).astype(dtype)
        kernel = int(rng.integers(1, 4))
        settings = dict(
            stride=int(rng.integers(1, 3)),
            padding=int(rng.integers(0, kernel // 2 + 1)),
            ceil_mode=trial % 3 == 0,
            return_indices=True,
        )
        ours = F.max_pool2d(mg.tensor(x), kernel, **settings)
        theirs = torch.nn.functional.max_pool2d(torch.tensor(x), kernel, **settings)
        assert_close(ours[0], theirs[0], same_dtype=True)
        assert_close(ours[1], theirs[1], same_dtype=True)


# -- gradients at ordinary points (the hardening audit's fifth finding) ---------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sinc_has_a_finite_gradient_next_to_zero(dtype):
    x = np.array([0.0, 1e-31, -1e-35, 1e-20, 1e-8, 1e-4, 0.3, -2.5], dtype)
    if dtype == np.float64:
        x = np.concatenate([x, [1e-300, 1e-170]])
    leaf, theirs = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mg.sinc(leaf).sum().backward()
    torch.sinc(theirs).sum().backward()
    assert np.isfinite(leaf.grad.numpy()).all()
    assert_close(leaf.grad, theirs.grad, dict(rtol=1e-5, atol=1e-7))


def test_atan2_at_the_origin_has_gradient_zero_as_in_torch():
    y, x = np.array([0.0, 0.0, 1.0, -2.0]), np.array([0.0, 1.0, 0.0, 3.0])
    ours = [mg.tensor(v, requires_grad=True) for v in (y, x)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (y, x)]
    mg.atan2(*ours).sum().backward()
    torch.atan2(*theirs).sum().backward()
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad)


def test_xlogy_gradient_in_x_is_log_y_also_where_x_is_zero():
    x, y = np.array([0.0, 0.0, 1.0, 0.0, 2.0]), np.array([2.0, 0.0, 3.0, -1.0, 0.5])
    ours = [mg.tensor(v, requires_grad=True) for v in (x, y)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, y)]
    mg.xlogy(*ours).sum().backward()
    torch.xlogy(*theirs).sum().backward()
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantiles_next_to_an_infinity_are_torchs(name):
    rng = np.random.default_rng(3)
    for _ in range(60):
        x = rng.standard_normal(7)
        x[rng.integers(0, 7, size=2)] = rng.choice([np.inf, -np.inf, np.nan], size=2)
        q = np.sort(rng.random(3))
        ours = getattr(mg, name)(mg.tensor(x), mg.tensor(q))
        theirs = getattr(torch, name)(torch.tensor(x), torch.tensor(q))
        assert_close(ours, theirs, what=f"{name}({x.tolist()}, {q.tolist()})")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_histc_refuses_data_whose_range_is_not_finite(bad):
    raises_like_torch(
        lambda: mg.histc(mg.tensor([1.0, bad, 2.0]), bins=4),
        lambda: torch.histc(torch.tensor([1.0, bad, 2.0]), bins=4),
        must_mention=["not finite"],
    )


# -- minigrad's own message instead of numpy's or Python's (the audit's "Also") ------------


@pytest.mark.parametrize(
    "name, ours, theirs, words",
    [
        (
            "arange to infinity",
            lambda: mg.arange(0, float("inf")),
            lambda: torch.arange(0, float("inf")),
            ["finite", "inf"],
        ),
        (
            "interpolate by an infinite factor",
            lambda: F.interpolate(mg.ones(1, 1, 4), scale_factor=float("inf")),
            lambda: torch.nn.functional.interpolate(torch.ones(1, 1, 4), scale_factor=float("inf")),
            ["scale_factor", "inf"],
        ),
        (
            "integer floor_divide by zero",
            lambda: mg.tensor([1, 2]) // 0,
            lambda: torch.tensor([1, 2]) // 0,
            ["division by zero"],
        ),
        (
            "integer floor_divide by a zero element",
            lambda: mg.floor_divide(mg.tensor([1, 2]), mg.tensor([0, 1])),
            lambda: torch.floor_divide(torch.tensor([1, 2]), torch.tensor([0, 1])),
            ["division by zero"],
        ),
        (
            "integer remainder by zero",
            lambda: mg.remainder(mg.tensor([1, 2]), 0),
            lambda: torch.remainder(torch.tensor([1, 2]), 0),
            ["division by zero"],
        ),
        (
            "integer fmod by a zero element",
            lambda: mg.fmod(mg.tensor([1, 2]), mg.tensor([0, 1])),
            lambda: torch.fmod(torch.tensor([1, 2]), torch.tensor([0, 1])),
            ["division by zero"],
        ),
        (
            "floor of a bool tensor",
            lambda: mg.floor(mg.tensor([True, False])),
            lambda: torch.floor(torch.tensor([True, False])),
            ["bool"],
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_bad_arguments_get_minigrads_own_message(name, ours, theirs, words):
    error = raises_like_torch(ours, theirs, must_mention=words)
    assert type(error).__module__ in ("builtins", "minigrad.errors"), name


def test_the_sign_of_a_bool_tensor_is_itself_as_in_torch():
    assert_close(mg.sign(mg.tensor([True, False])), torch.sign(torch.tensor([True, False])))


def test_writing_into_an_expanded_view_says_what_to_do():
    expanded = mg.zeros(2).expand(3, 2)
    with pytest.raises(RuntimeError, match="read-only.*clone"):
        expanded[0] = 7
