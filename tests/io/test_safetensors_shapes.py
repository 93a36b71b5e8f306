"""mg.save_safetensors keeps what a state_dict holds (minigrad/io/safetensors.py): a 0-d tensor
stays 0-d, read back by the safetensors package's own numpy and torch loaders and by PyTorch's
BatchNorm (its num_batches_tracked), and a 0-d tensor written by torch comes back 0-d here; the
key `__metadata__`, the format's own, is refused before anything is written."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
from minigrad import nn

torch = pytest.importorskip("torch")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
safetensors_torch = pytest.importorskip("safetensors.torch")


def test_a_zero_dim_tensor_stays_zero_dim(tmp_path):
    """save_safetensors wrote a 0-d tensor as shape [1]: both loaders read [3.5], not 3.5."""
    path = tmp_path / "scalars.safetensors"
    state = {"scale": mg.tensor(3.5), "count": mg.tensor(7), "flag": np.array(True)}
    state["row"] = mg.tensor([1.0, 2.0])
    mg.save_safetensors(state, path)
    by_numpy = safetensors_numpy.load_file(str(path))
    by_torch = safetensors_torch.load_file(str(path))
    shapes = {"scale": (), "count": (), "flag": (), "row": (2,)}
    assert {key: value.shape for key, value in by_numpy.items()} == shapes
    assert {key: tuple(value.shape) for key, value in by_torch.items()} == shapes
    assert by_numpy["scale"] == np.float32(3.5) and by_torch["count"].item() == 7
    ours = mg.load_safetensors(path)
    assert {key: value.shape for key, value in ours.items()} == shapes


def test_batchnorm_num_batches_tracked_crosses_to_torch_zero_dim(tmp_path):
    """A BatchNorm's num_batches_tracked came back 1-d (torch's BatchNorm copied it in all the
    same, but the file no longer said what the model held)."""
    path = tmp_path / "batchnorm.safetensors"
    ours = nn.BatchNorm1d(3)
    ours.train()
    ours(mg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3)))
    mg.save_safetensors(ours.state_dict(), path)
    state = safetensors_torch.load_file(str(path))
    assert state["num_batches_tracked"].shape == ()
    theirs = torch.nn.BatchNorm1d(3)
    theirs.load_state_dict(state)
    assert theirs.num_batches_tracked.shape == () and theirs.num_batches_tracked.item() == 1
    np.testing.assert_allclose(theirs.running_mean.numpy(), ours.running_mean.numpy())


def test_a_zero_dim_tensor_written_by_torch_reads_zero_dim(tmp_path):
    path = tmp_path / "torch.safetensors"
    theirs = torch.nn.BatchNorm1d(3)
    theirs.num_batches_tracked += 5
    safetensors_torch.save_file(theirs.state_dict(), str(path))
    loaded = mg.load_safetensors(path)
    assert loaded["num_batches_tracked"].shape == () and loaded["num_batches_tracked"] == 5
    ours = nn.BatchNorm1d(3)
    ours.load_state_dict(loaded)
    assert ours.state_dict()["num_batches_tracked"].shape == ()
    mg.save_safetensors(ours.state_dict(), path)  # and back again
    assert safetensors_torch.load_file(str(path))["num_batches_tracked"].shape == ()


def test_the_metadata_key_is_refused_naming_it_and_nothing_is_written(tmp_path):
    """A tensor named __metadata__ was saved and made the file unreadable."""
    path = tmp_path / "weights.safetensors"
    mg.save_safetensors({"weight": mg.tensor([1.0, 2.0])}, path)
    before = path.read_bytes()
    with pytest.raises(mg.errors.ArgumentError, match="'__metadata__' is reserved"):
        mg.save_safetensors({"weight": mg.tensor([3.0]), "__metadata__": mg.tensor([0.0])}, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["weights.safetensors"]
    fresh = tmp_path / "fresh.safetensors"
    with pytest.raises(ValueError, match="__metadata__"):
        mg.save_safetensors({"__metadata__": np.zeros(2, np.float32)}, fresh)
    assert not fresh.exists()
    np.testing.assert_array_equal(mg.load_safetensors(path)["weight"], [1.0, 2.0])
