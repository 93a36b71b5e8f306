"""The dropout layers (nn/dropout.py): kept elements scaled and identity in eval, gradients through
the kept elements only, channel and alpha dropout as torch's, in-place spellings and reprs.
"""

import warnings

import numpy as np
import pytest

import minigrad as mg
from layer_checks import assert_refused_as_torch, normal
from minigrad import nn
from minigrad.nn import functional as F

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")


def test_dropout_scales_kept_elements_and_is_identity_in_eval():
    mg.manual_seed(6)
    layer = nn.Dropout(0.25)
    x = mg.ones(200, 100)
    y = layer(x).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75)
    assert abs(kept.mean() - 0.75) < 0.01  # 20000 draws
    layer.eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match=r"\[0, 1\].*1.5"):
        nn.Dropout(1.5)


def test_dropout_gradient_flows_only_through_kept_elements():
    mg.manual_seed(8)
    x = mg.ones(50, dtype=np.float64, requires_grad=True)
    y = nn.Dropout(0.5)(x)
    y.sum().backward()
    # d(x * mask / 0.5)/dx = mask / 0.5 = y when x == 1
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())


def test_dropout_inplace_module_writes_into_its_input():
    mg.manual_seed(3)
    x = mg.ones(100) * 1
    assert nn.Dropout(0.5, inplace=True)(x) is x
    assert set(np.unique(x.numpy())) == {0.0, 2.0}
    assert repr(nn.Dropout(0.5, inplace=True)) == "Dropout(p=0.5, inplace=True)"


CHANNEL_DROPOUTS = [
    ("Dropout1d", (8, 16, 5), 2),
    ("Dropout1d", (16, 7), 1),
    ("Dropout2d", (8, 16, 3, 4), 2),
    ("FeatureAlphaDropout", (8, 16, 3, 4), 2),
    ("FeatureAlphaDropout", (8, 16, 5), 2),
]


@pytest.mark.parametrize("name, shape, drawn_dims", CHANNEL_DROPOUTS)
def test_channel_dropout_drops_whole_channels_as_often_as_asked(name, shape, drawn_dims):
    mg.manual_seed(0)
    layer = getattr(nn, name)(p=0.3)
    x = mg.tensor(np.abs(normal(*shape)) + 1)  # never 0 or negative: a dropped place shows
    out = layer(x).numpy()
    values = out.reshape(shape[:drawn_dims] + (-1,))
    inputs = x.numpy().reshape(values.shape)
    # a dropped channel is one constant; the kept ones are one line in x (a scaling for plain
    # dropout)
    kept = ~np.isclose(np.ptp(values, axis=-1), 0)
    slope, intercept = np.polyfit(inputs[kept].ravel(), values[kept].ravel(), 1)
    np.testing.assert_allclose(values[kept], slope * inputs[kept] + intercept, rtol=1e-6, atol=1e-6)
    assert np.unique(values[~kept]).size == 1
    if name.startswith("Dropout"):
        np.testing.assert_allclose(
            [slope, intercept, values[~kept][0, 0]], [1 / 0.7, 0, 0], atol=1e-6
        )
    assert 0.5 < kept.mean() < 0.9  # 128 or 16 channels with a keep probability of 0.7
    layer.eval()
    assert layer(x) is x


def test_dropout_statistics_with_a_fixed_seed():
    """Over many channels the kept share is 1 - p, and the mean is kept (1 / (1 - p) scaling)."""
    mg.manual_seed(123)
    x = mg.ones(64, 256, 2, 2)
    out = F.dropout2d(x, p=0.25).numpy()
    channel_values = out[:, :, 0, 0]
    assert set(np.unique(channel_values)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((channel_values != 0).mean() - 0.75) < 0.01
    assert abs(out.mean() - 1) < 0.02
    mg.manual_seed(123)
    # the same seed, the same channels
    np.testing.assert_array_equal(F.dropout2d(x, p=0.25).numpy(), out)


@pytest.mark.parametrize("function", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_keeps_a_standard_normal_standard(function):
    mg.manual_seed(5)
    x = mg.tensor(normal(400, 300, 4))
    out = getattr(F, function)(x, p=0.2, training=True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02


def _affine_rule(out, x):
    """(the value of the dropped places, the slope and the intercept of the kept ones in x)."""
    values, counts = np.unique(out, return_counts=True)
    dropped = values[np.argmax(counts)]
    kept = out != dropped
    slope, intercept = np.polyfit(x[kept], out[kept], 1)
    return np.array([dropped, slope, intercept])


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_alpha_dropout_follows_torchs_affine_rule(p):
    """Kept places a * x + b, dropped ones one constant: a, b and the constant are torch's."""
    x = normal(2000)
    torch.manual_seed(0)
    theirs = torch.nn.functional.alpha_dropout(torch.tensor(x), p, training=True).numpy()
    mg.manual_seed(0)
    ours = F.alpha_dropout(mg.tensor(x), p, training=True).numpy()
    np.testing.assert_allclose(_affine_rule(ours, x), _affine_rule(theirs, x), rtol=1e-8)


@pytest.mark.parametrize(
    "call",
    [
        lambda F, x: F.dropout1d(x, 0.4),
        lambda F, x: F.dropout2d(x[..., None], 0.4)[..., 0],
        lambda F, x: F.alpha_dropout(x, 0.4, True),
        lambda F, x: F.feature_alpha_dropout(x, 0.4, True),
    ],
)
def test_dropout_gradient_is_the_mask_of_the_forward(call):
    mg.manual_seed(3)
    x = mg.tensor(normal(4, 6, 5), requires_grad=True)
    out = call(F, x)
    out.sum().backward()
    # the output is affine in x with the drawn mask as slope: compare with a finite difference
    with mg.no_grad():
        mg.manual_seed(3)
        nudged = call(F, mg.tensor(x.numpy() + 1e-3)).numpy()
    np.testing.assert_allclose(x.grad.numpy(), (nudged - out.numpy()) / 1e-3, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "function", ["dropout1d", "dropout2d", "alpha_dropout", "feature_alpha_dropout"]
)
def test_dropout_in_place_and_p_one(function):
    shape = (2, 3, 4) if function == "dropout1d" else (2, 3, 4, 2)
    mg.manual_seed(4)
    x = mg.tensor(normal(*shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(F, function)(x, 0.5, True).numpy()
        mg.manual_seed(4)
        out = getattr(F, function)(x, 0.5, True, inplace=True)
        zeros = getattr(F, function)(mg.tensor(normal(*shape)), 1.0, True)
    np.testing.assert_array_equal(x.numpy(), expected)
    assert out is x
    np.testing.assert_array_equal(zeros.numpy(), np.zeros(shape))


def test_dropout2d_warns_as_torch_for_3d_and_2d_inputs():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        out = F.dropout2d(mg.ones(2, 64, 3), 0.5)
    assert np.all(np.ptp(out.numpy(), axis=-1) == 0)  # (N, C, L): whole rows, as torch
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d, which is deprecated"):
        F.dropout2d(mg.ones(4, 5), 0.5)


@pytest.mark.parametrize("name", ["Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout"])
def test_dropout_reprs_are_torchs(name):
    assert repr(getattr(nn, name)(0.25)) == repr(getattr(torch.nn, name)(0.25))
    assert repr(getattr(nn, name)(0.5, inplace=True)) == repr(
        getattr(torch.nn, name)(0.5, inplace=True)
    )


def test_dropout2d_with_p_above_1_is_refused_naming_it():
    assert_refused_as_torch(
        lambda L: L.nn.Dropout2d(2.0), ValueError, r"p must be in \[0, 1\]; got 2.0"
    )
