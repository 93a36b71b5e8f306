"""torch's factory keywords on every layer whose torch counterpart takes them: `device=` and
`dtype=`. The same call is made in both libraries and the parameters and buffers compared by
name, shape and dtype; the CPU is accepted however it is named, another device refused with an
error that names it and says there is no CUDA, and an integer dtype refused naming the layer.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.errors import DTypeError

torch = pytest.importorskip("torch")

# name -> (positional arguments, keyword arguments) of the same call in both libraries
LAYERS = {
    "Linear": ((3, 4), {}),
    "Linear no bias": ((3, 4), {"bias": False}),
    "Conv1d": ((2, 4, 3), {}),
    "Conv2d": ((2, 4, 3), {"groups": 2}),
    "ConvTranspose1d": ((2, 4, 3), {}),
    "ConvTranspose2d": ((2, 4, 3), {"bias": False}),
    "Embedding": ((10, 4), {"padding_idx": 0}),
    "LayerNorm": ((4,), {}),
    "LayerNorm of two dims, no bias": (((2, 4),), {"bias": False}),
    "RMSNorm": ((4,), {}),
    "GroupNorm": ((2, 4), {}),
    "BatchNorm1d": ((4,), {}),
    "BatchNorm2d": ((4,), {"affine": False}),
    "InstanceNorm1d": ((4,), {"affine": True, "track_running_stats": True}),
    "InstanceNorm2d": ((4,), {"affine": True}),
    "PReLU": ((3,), {}),
    "LSTM": ((3, 4, 2), {"bidirectional": True}),
    "GRU": ((3, 4), {"batch_first": True}),
    "RNN": ((3, 4), {"nonlinearity": "relu", "bias": False}),
    "LSTMCell": ((3, 4), {}),
    "GRUCell": ((3, 4), {}),
    "RNNCell": ((3, 4), {"nonlinearity": "relu"}),
    "MultiheadAttention": ((8, 2), {"kdim": 6, "vdim": 5}),
    "TransformerEncoderLayer": ((8, 2), {"dim_feedforward": 16}),
    "TransformerDecoderLayer": ((8, 2), {"dim_feedforward": 16, "norm_first": True}),
    "Transformer": (
        (),
        dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16),
    ),
}

DTYPES = {"float64": (mg.float64, torch.float64), "float32": (mg.float32, torch.float32)}
CPU_NAMES = {
    "'cpu'": ("cpu", "cpu"),
    "'cpu:0'": ("cpu:0", "cpu:0"),
    "device('cpu')": (mg.device("cpu"), torch.device("cpu")),
    "None": (None, None),
}


def _layer(library, case, **factory):
    args, kwargs = LAYERS[case]
    return getattr(library.nn, case.split()[0])(*args, **kwargs, **factory)


def _tensors(module):
    """{name: (shape, dtype name)} of a module's parameters and buffers, minigrad's or torch's."""
    items = list(module.named_parameters()) + list(module.named_buffers())
    return {name: (tuple(t.shape), str(t.detach().numpy().dtype)) for name, t in items}


@pytest.mark.parametrize("device", CPU_NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", LAYERS)
def test_parameters_and_buffers_as_torch_makes_them(case, dtype, device):
    (our_dtype, their_dtype), (our_device, their_device) = DTYPES[dtype], CPU_NAMES[device]
    ours = _layer(mg, case, device=our_device, dtype=our_dtype)
    theirs = _layer(torch, case, device=their_device, dtype=their_dtype)
    assert _tensors(ours) == _tensors(theirs)
    floats = [t for t in list(ours.parameters()) + list(ours.buffers()) if t.dtype.kind == "f"]
    assert floats and all(t.dtype == np.dtype(dtype) for t in floats)


@pytest.mark.parametrize("case", LAYERS)
def test_without_dtype_the_parameters_take_the_default_dtype_as_in_torch(case):
    assert _tensors(_layer(mg, case)) == _tensors(_layer(torch, case))
    previous = mg.get_default_dtype(), torch.get_default_dtype()
    mg.set_default_dtype(mg.float64)
    torch.set_default_dtype(torch.float64)
    try:
        assert _tensors(_layer(mg, case)) == _tensors(_layer(torch, case))
    finally:
        mg.set_default_dtype(previous[0])
        torch.set_default_dtype(previous[1])


@pytest.mark.parametrize("device", ["cuda", "cuda:1", mg.device("cuda"), "mps"], ids=str)
@pytest.mark.parametrize("case", LAYERS)
def test_another_device_is_refused_saying_there_is_no_cuda(case, device):
    name = case.split()[0]
    with pytest.raises(RuntimeError) as error:
        _layer(mg, case, device=device)
    message = str(error.value)
    assert name in message and repr(str(device)) in message, message
    assert "CPU only" in message and "mg.cuda.is_available() is False" in message, message


@pytest.mark.parametrize("case", LAYERS)
def test_an_integer_dtype_is_refused_naming_the_layer(case):
    with pytest.raises(
        DTypeError, match=f"{case.split()[0]}: layer parameters must be float32 or "
    ):
        _layer(mg, case, dtype=mg.int64)


def test_positional_device_and_dtype_follow_torchs_order():
    """Where torch's signature has device and dtype positionally after the layer's own
    arguments, so does minigrad's (the recurrent layers take them by name, as torch's eighth
    positional argument there is proj_size)."""
    linear = nn.Linear(3, 4, True, "cpu", mg.float64)
    norm = nn.LayerNorm(4, 1e-5, True, True, "cpu", mg.float64)
    cell = nn.RNNCell(3, 4, True, "tanh", "cpu", mg.float64)
    assert {linear.weight.dtype, norm.weight.dtype, cell.weight_ih.dtype} == {np.dtype("float64")}
    torch.nn.Linear(3, 4, True, "cpu", torch.float64)  # the same call runs in torch
    with pytest.raises(TypeError):
        nn.LSTM(3, 4, 1, True, False, 0.0, False, "cpu")
