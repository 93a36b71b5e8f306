"""DistributedDataParallel under `mpiexec -n 2`: each rank trains on its half of every batch,
starting from weights of its own (rank 0's are broadcast), and the run gives the losses and
weights of one process training on the whole batch, for an MLP (one bucket and several) and a
character language model (examples/language_model); gradients accumulated under no_sync() are
averaged by the next synchronised backward; a parameter left out of the loss is named at the
next forward; rank 0's checkpoint is the one file written. Refusals in a world of one."""

import numpy as np
import pytest
from distributed_checks import TORCHRUN_VARIABLES, rank_results, run_mpi

import minigrad as mg
import minigrad.distributed as dist
from minigrad import nn
from minigrad.nn.parallel import DistributedDataParallel

# float64 throughout: the two runs differ only in how the batch's mean is summed
RTOL, ATOL = 1e-10, 1e-12

TRAINING = """
import numpy as np
import minigrad as mg
from minigrad import nn
from examples.language_model.model import CharTransformer

ROWS, STEPS, SEED = 8, 4, 123


def mlp():
    layers = [nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 3)]
    return nn.Sequential(*layers).double()


def char_lm():
    model = CharTransformer(11, context=6, model_dim=16, num_heads=2, num_layers=2, ff_dim=24)
    return model.double()


def batches(kind):
    rng = np.random.default_rng(7)
    if kind == "mlp":
        return rng.normal(size=(STEPS, ROWS, 5)), rng.integers(0, 3, size=(STEPS, ROWS))
    ids = rng.integers(0, 11, size=(STEPS, ROWS, 7))
    return ids[..., :-1], ids[..., 1:]


def loss_of(kind, model, inputs, targets):
    if kind == "mlp":
        return mg.cross_entropy(model(mg.tensor(inputs)), mg.tensor(targets))
    logits = model(mg.tensor(inputs))
    return mg.cross_entropy(logits.reshape(-1, 11), mg.tensor(targets.reshape(-1)))


def train(kind, model, rows):
    # AdamW with weight decay: its step depends on the gradient's size, not only its sign
    optimizer = mg.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1)
    inputs, targets = batches(kind)
    losses = []
    for step in range(STEPS):
        loss = loss_of(kind, model, inputs[step][rows], targets[step][rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
"""

DATA_PARALLEL = """
import sys
import minigrad.distributed as dist
from minigrad.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
folder, out = sys.argv[1], {}
half = slice(rank * ROWS // world, (rank + 1) * ROWS // world)


def replica(make, seed):
    mg.manual_seed(seed + 1000 * rank)  # each rank its own weights: rank 0's must win
    model = make()
    out[f"{name}:differs"] = np.array(rank > 0)
    return model


for name, make, cap in [("mlp", mlp, None), ("mlp_buckets", mlp, 0.0005), ("lm", char_lm, None)]:
    kind = "lm" if name == "lm" else "mlp"
    ddp = DDP(replica(make, SEED), bucket_cap_mb=cap)
    out[f"{name}:buckets"] = np.array(len(ddp._buckets))
    losses = mg.tensor(train(kind, ddp, half), dtype=mg.float64)
    dist.all_reduce(losses, op=dist.ReduceOp.AVG)  # the whole batch's mean loss
    out[f"{name}:losses"] = losses.numpy()
    for key, value in ddp.module.state_dict().items():
        out[f"{name}:{key}"] = value.numpy()

# gradient accumulation: two micro-batches per rank, the first under no_sync(), the second
# with nanoGPT's attribute instead
mg.manual_seed(SEED)
ddp = DDP(mlp())
inputs, targets = batches("mlp")
quarter = ROWS // (2 * world)
for micro in range(2):
    rows = slice((2 * rank + micro) * quarter, (2 * rank + micro + 1) * quarter)
    if micro == 0:
        with ddp.no_sync():
            (loss_of("mlp", ddp, inputs[0][rows], targets[0][rows]) / 2).backward()
        out["local grad"] = ddp.module[0].weight.grad.numpy().copy()
    else:
        ddp.require_backward_grad_sync = True
        (loss_of("mlp", ddp, inputs[0][rows], targets[0][rows]) / 2).backward()
for key, p in ddp.module.named_parameters():
    out[f"accumulated:{key}"] = p.grad.numpy()

# buffers: each rank's BatchNorm statistics from its own half, then rank 0's before a forward
mg.manual_seed(SEED + rank)
with_norm = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4)).double()
ddp = DDP(with_norm)
ddp(mg.tensor(inputs[0][half])).sum().backward()
out["statistics before"] = with_norm[1].running_mean.numpy().copy()
ddp.eval()
ddp(mg.tensor(inputs[1][half]))  # eval: the statistics are only read, after the broadcast
out["statistics after"] = with_norm[1].running_mean.numpy().copy()

# a parameter that no loss uses
class WithUnused(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x):
        return self.used(x)


ddp = DDP(WithUnused())
ddp(mg.ones(2, 3)).sum().backward()
try:
    ddp(mg.ones(2, 3))
except RuntimeError as error:
    out["unused"] = np.array(str(error))

# the checkpoint: rank 0 writes it, every rank reads it back
if rank == 0:
    mg.save({"model": ddp.module.state_dict(), "step": 1}, f"{folder}/checkpoint.pt")
dist.barrier()
loaded = mg.load(f"{folder}/checkpoint.pt")
out["checkpoint equal"] = np.array(all(
    np.array_equal(loaded["model"][k], v.numpy()) for k, v in ddp.module.state_dict().items()
))
np.savez(f"{folder}/rank{rank}.npz", **out)
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    run_mpi(TRAINING + DATA_PARALLEL, 2, folder)
    return folder


@pytest.fixture(scope="module")
def results(folder):
    return rank_results(folder, 2)


@pytest.fixture(scope="module")
def training():
    namespace = {}
    exec(TRAINING, namespace)
    return namespace


def one_process(training, kind):
    """The same training in this process, on the whole batch, from rank 0's weights."""
    mg.manual_seed(training["SEED"])
    model = training["mlp" if kind == "mlp" else "char_lm"]()
    losses = training["train"](kind, model, slice(None))
    return losses, {key: value.numpy() for key, value in model.state_dict().items()}


@pytest.mark.parametrize("name", ["mlp", "mlp_buckets", "lm"])
def test_two_processes_on_halves_train_as_one_on_the_whole_batch(results, training, name):
    losses, weights = one_process(training, "lm" if name == "lm" else "mlp")
    for rank_result in results:
        np.testing.assert_allclose(rank_result[f"{name}:losses"], losses, rtol=RTOL, atol=ATOL)
        for key, value in weights.items():
            got = rank_result[f"{name}:{key}"]
            np.testing.assert_allclose(got, value, rtol=RTOL, atol=ATOL, err_msg=key)
    # the runs started from different weights on each rank, and moved: not a trivial match
    assert bool(results[1][f"{name}:differs"])
    first = next(iter(weights))
    mg.manual_seed(training["SEED"])
    start = training["mlp" if name != "lm" else "char_lm"]().state_dict()[first].numpy()
    assert not np.allclose(start, weights[first])


def test_a_small_bucket_cap_cuts_the_parameters_into_several_buckets(results):
    assert int(results[0]["mlp:buckets"]) == 1
    assert int(results[0]["mlp_buckets:buckets"]) >= 3


def test_gradients_accumulated_under_no_sync_are_averaged_by_the_next_backward(results, training):
    mg.manual_seed(training["SEED"])
    model = training["mlp"]()
    inputs, targets = training["batches"]("mlp")
    training["loss_of"]("mlp", model, inputs[0], targets[0]).backward()
    for key, p in model.named_parameters():
        for rank_result in results:
            got = rank_result[f"accumulated:{key}"]
            np.testing.assert_allclose(got, p.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=key)
    # under no_sync each rank kept its own micro-batch's gradient
    assert not np.allclose(results[0]["local grad"], results[1]["local grad"])


def test_rank_0s_buffers_reach_every_rank_before_each_forward(results):
    before = [r["statistics before"] for r in results]
    assert not np.allclose(before[0], before[1])  # each rank's own half
    for rank_result in results:
        np.testing.assert_array_equal(rank_result["statistics after"], before[0])


def test_a_parameter_no_loss_used_is_named_at_the_next_forward(results):
    for rank_result in results:
        message = str(rank_result["unused"])
        assert "gave no gradient to unused.weight, unused.bias" in message


def test_rank_0s_checkpoint_is_the_one_file_written_and_every_rank_reads_it(folder, results):
    assert all(bool(r["checkpoint equal"]) for r in results)
    written = sorted(p.name for p in folder.iterdir() if not p.name.startswith("rank"))
    assert written == ["checkpoint.pt", "script.py"]


# -- a world of one: this process --------------------------------------------------------------


@pytest.fixture
def world_of_one(monkeypatch):
    pytest.importorskip("mpi4py")
    for variable in TORCHRUN_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    dist.init_process_group("mpi")
    yield
    dist.destroy_process_group()


@pytest.mark.usefixtures("world_of_one")
def test_in_a_world_of_one_it_is_the_module_with_torchs_names():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
    ddp = DistributedDataParallel(model)
    assert ddp.module is model and list(ddp.parameters()) == list(model.parameters())
    assert list(ddp.state_dict()) == ["module." + key for key in model.state_dict()]
    x = mg.randn(5, 4)
    ddp(x).sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for grad, p in zip(grads, model.parameters()):
        np.testing.assert_array_equal(grad, p.grad.numpy())


BAD_WRAPS = [
    (lambda: DistributedDataParallel("model"), TypeError, "must be an nn.Module; got str"),
    (lambda: DistributedDataParallel(nn.ReLU()), ValueError, "no parameter that requires grad"),
    (lambda: DistributedDataParallel(nn.Linear(2, 2), device_ids=[0]), ValueError, r"\[0\]"),
    (
        lambda: DistributedDataParallel(nn.Linear(2, 2), find_unused_parameters=True),
        ValueError,
        "find_unused_parameters=True is not supported",
    ),
    (lambda: DistributedDataParallel(nn.Linear(2, 2), bucket_cap_mb=0), ValueError, "> 0; got 0"),
    (lambda: DistributedDataParallel(nn.Linear(2, 2), bucket_cap_mb="1"), TypeError, "'1'"),
]


@pytest.mark.usefixtures("world_of_one")
@pytest.mark.parametrize("wrap, error, message", BAD_WRAPS)
def test_what_it_cannot_wrap_is_refused_naming_it(wrap, error, message):
    with pytest.raises(error, match=message):
        wrap()


def test_wrapping_before_init_process_group_says_to_call_it():
    with pytest.raises(dist.DistError, match="call minigrad.distributed.init_process_group"):
        DistributedDataParallel(nn.Linear(2, 2))
