"""minigrad.onnx.export's contract beyond the numbers (minigrad/onnx/exporting.py, __init__.py):
what cannot be exported is refused by op and layer before anything is written; f is a path
(written atomically) or a binary file object; bad arguments are refused naming what was
expected; the model's training mode is restored; opsets 17 to 21."""

import io
import os
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.onnx
from minigrad import nn
from minigrad.nn import functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class Running(nn.Module):
    def forward(self, x):
        return x.cumsum(dim=1)


class Pooled(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 2)


class Masked(nn.Module):
    def forward(self, x):
        return x[x > 0]


class Shifted(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)

    def forward(self, ids):
        return self.embedding(ids[:, 1:])  # an op on the integer ids: not recorded


def x_of(*shape):
    return mg.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


REFUSED = [
    (lambda: nn.Sequential(nn.Linear(4, 4), Running()), (2, 4), ["CumSum", "'1'", "Running"]),
    (lambda: nn.Sequential(nn.Identity(), Pooled()), (1, 1, 4, 4), ["MaxPool", "'1'", "Pooled"]),
    (lambda: nn.Sequential(Masked()), (2, 3), ["GetItem", "bool mask", "'0'"]),
    (lambda: nn.Sequential(nn.Embedding(10, 4, max_norm=1.0)), None, ["max_norm", "'0'"]),
    (lambda: Shifted(), None, ["computed from an input", "(2, 4)"]),
    (lambda: nn.Sequential(nn.LSTM(3, 2).double()), "float64", ["float64", "model.float()"]),
]


@pytest.mark.parametrize(
    "make, shape, named", REFUSED, ids=["cumsum", "pool", "mask", "norm", "ids", "float64"]
)
def test_what_cannot_be_exported_is_refused_by_name_before_a_file_is_written(
    make, shape, named, tmp_path
):
    mg.manual_seed(0)
    if shape == "float64":
        args = (x_of(4, 2, 3).double(),)
    else:
        args = (x_of(*shape),) if shape else (mg.tensor(np.arange(10).reshape(2, 5) % 10),)
    path = tmp_path / "model.onnx"
    with pytest.raises(mg.onnx.UnsupportedOperatorError) as refused:
        mg.onnx.export(make(), args, path)
    assert all(word in str(refused.value) for word in named), str(refused.value)
    assert isinstance(refused.value, RuntimeError)
    assert os.listdir(tmp_path) == []


def mlp():
    mg.manual_seed(1)
    return nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Tanh())


def test_a_refusal_leaves_an_earlier_file_as_it_was(tmp_path):
    path = tmp_path / "model.onnx"
    mg.onnx.export(mlp(), x_of(2, 3), path)
    before = path.read_bytes()
    with pytest.raises(mg.onnx.UnsupportedOperatorError):
        mg.onnx.export(nn.Sequential(nn.Linear(3, 4), Running()), x_of(2, 3), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.onnx"]


def test_f_may_be_a_path_a_path_like_or_a_binary_file(tmp_path):
    model, x = mlp(), x_of(2, 3)
    made = mg.onnx.export(model, (x,), str(tmp_path / "a.onnx"))
    mg.onnx.export(model, x, tmp_path / "b.onnx")
    buffer = io.BytesIO()
    mg.onnx.export(model, x, buffer)
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    assert buffer.getvalue() == made.SerializeToString() == (tmp_path / "a.onnx").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["a.onnx", "b.onnx"]  # no temporary file left


def test_the_model_runs_in_eval_mode_and_keeps_its_own_mode():
    model, x = mlp(), x_of(5, 3)
    model.train()
    buffer = io.BytesIO()
    mg.onnx.export(model, x, buffer, input_names=["x"])
    assert model.training and all(m.training for m in model.modules())
    model.eval()
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], model(x).numpy(), 1e-5)


def test_names_default_to_forwards_parameters_and_are_used():
    made = mg.onnx.export(mlp(), x_of(2, 3), io.BytesIO())
    assert [i.name for i in made.graph.input] == ["x"]  # Sequential.forward(self, x)
    assert [o.name for o in made.graph.output] == ["output_0"]
    made = mg.onnx.export(
        mlp(), x_of(2, 3), io.BytesIO(), input_names=["features"], output_names=["scores"],
        dynamic_axes={"features": {0: "batch"}, "scores": [0]},
    )  # fmt: skip
    shape = made.graph.input[0].type.tensor_type.shape.dim
    assert [i.name for i in made.graph.input] == ["features"] and shape[0].dim_param == "batch"
    assert made.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "scores_dynamic_axes_1"


@pytest.mark.parametrize("opset", [17, 18, 21])
def test_each_opset_runs(opset):
    mg.manual_seed(2)

    class Mean(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 4)

        def forward(self, x):
            return self.linear(x).mean(dim=1)

    model, x = Mean(), x_of(2, 5, 3)
    buffer = io.BytesIO()
    made = mg.onnx.export(model, x, buffer, input_names=["x"], opset_version=opset)
    assert made.opset_import[0].version == opset
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], model(x).numpy(), 1e-5)


BAD = [
    (lambda t: dict(model=lambda x: x), TypeError, "nn.Module"),
    (lambda t: dict(args=[1, 2]), TypeError, "Tensor"),
    (lambda t: dict(args=()), TypeError, "non-empty"),
    (lambda t: dict(f=3), TypeError, "path or a binary file"),
    (lambda t: dict(f=t / "missing" / "m.onnx"), FileNotFoundError, "does not exist"),
    (lambda t: dict(f=t), FileNotFoundError, "is a folder"),
    (lambda t: dict(opset_version=12), ValueError, "17 to 21"),
    (lambda t: dict(opset_version="17"), ValueError, "17 to 21"),
    (lambda t: dict(input_names=["a", "b"]), ValueError, "2 input_names"),
    (lambda t: dict(output_names=["a", "b"]), ValueError, "2 output_names"),
    (lambda t: dict(dynamic_axes={"nope": [0]}), ValueError, "nope"),
    (lambda t: dict(dynamic_axes={"x": [2]}), ValueError, "axis 2"),
    (lambda t: dict(dynamic_axes={"x": 0}), TypeError, "list of axes"),
    (lambda t: dict(dynamic_axes=[0]), TypeError, "dict"),
]


@pytest.mark.parametrize("change, error, named", BAD, ids=[b[2] for b in BAD])
def test_bad_arguments_are_refused_naming_what_was_expected(change, error, named, tmp_path):
    call = dict(model=mlp(), args=(x_of(2, 3),), f=tmp_path / "m.onnx") | change(tmp_path)
    with pytest.raises(error, match=None) as refused:
        mg.onnx.export(**call)
    assert named in str(refused.value), str(refused.value)
    assert not (tmp_path / "m.onnx").exists()


class Counted(nn.Module):
    def forward(self, x):
        return x + mg.tensor(np.arange(x.shape[0], dtype=np.float32))[:, None]


def test_a_constant_made_in_forward_of_a_dynamic_size_is_warned_about():
    with pytest.warns(UserWarning, match=r"shape \(7, 1\) made during the run"):
        mg.onnx.export(Counted(), x_of(7, 3), io.BytesIO(), dynamic_axes={"x": [0]})
    with warnings.catch_warnings():  # no dynamic axis of that size: nothing to say
        warnings.simplefilter("error")
        mg.onnx.export(Counted(), x_of(7, 3), io.BytesIO(), dynamic_axes={"x": [1]})
        mg.onnx.export(mlp(), x_of(3, 3), io.BytesIO(), dynamic_axes={"x": [0]})
