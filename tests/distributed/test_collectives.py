"""minigrad.distributed's collectives: under `mpiexec -n 3`, all_reduce (every ReduceOp),
broadcast and all_gather give on every rank what numpy computes from all ranks' inputs; bad
arguments are refused naming what was expected, in a world of one (this process)."""

import numpy as np
import pytest
from distributed_checks import rank_results, run_mpi

import minigrad as mg
import minigrad.distributed as dist

PROCESSES = 3

# Each rank's inputs are a function of its rank alone, so the test can compute them all.
COLLECTIVES = """
import sys
import numpy as np
import minigrad as mg
import minigrad.distributed as dist


def inputs(rank):
    rng = np.random.default_rng(rank)
    return {
        "float32": rng.normal(size=(2, 3)).astype(np.float32),
        "float64": rng.normal(size=(4,)),
        "int64": rng.integers(-5, 6, size=(3, 2)),
        "bits": rng.integers(0, 64, size=(5,)),
    }


dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
own, out = inputs(rank), {}
for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
    for dtype in ("float32", "float64", "int64"):
        if op == "AVG" and dtype == "int64":
            continue
        t = mg.tensor(own[dtype].copy())
        assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
        out[f"{op}_{dtype}"] = t.numpy()
for op in ("BAND", "BOR", "BXOR"):
    t = mg.tensor(own["bits"].copy())
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    out[f"{op}_bits"] = t.numpy()
# a view: the result lands in the tensor it views
base = mg.tensor(own["float64"].copy())
dist.all_reduce(base[1:3])
out["view_base"] = base.numpy()
for src in range(world):
    t = mg.tensor(own["float32"].copy())
    work = dist.broadcast(t, src=src, async_op=True)
    assert work.wait() and work.is_completed()
    out[f"broadcast_{src}"] = t.numpy()
gathered = [mg.zeros(3, 2, dtype=mg.int64) for _ in range(world)]
dist.all_gather(gathered, mg.tensor(own["int64"]))
out["all_gather"] = np.stack([t.numpy() for t in gathered])
dist.barrier()
out["rank"], out["world"] = np.array(rank), np.array(world)
np.savez(f"{sys.argv[1]}/rank{rank}.npz", **out)
dist.destroy_process_group()
"""


def expected_inputs():
    namespace = {}
    exec(COLLECTIVES.split("\n\ndist.init_process_group")[0], namespace)
    return [namespace["inputs"](rank) for rank in range(PROCESSES)]


REDUCTIONS = {
    "SUM": lambda arrays: np.sum(arrays, axis=0),
    "AVG": lambda arrays: np.sum(arrays, axis=0) / len(arrays),
    "PRODUCT": lambda arrays: np.prod(arrays, axis=0),
    "MIN": lambda arrays: np.min(arrays, axis=0),
    "MAX": lambda arrays: np.max(arrays, axis=0),
    "BAND": lambda arrays: np.bitwise_and.reduce(arrays, axis=0),
    "BOR": lambda arrays: np.bitwise_or.reduce(arrays, axis=0),
    "BXOR": lambda arrays: np.bitwise_xor.reduce(arrays, axis=0),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("collectives")
    run_mpi(COLLECTIVES, PROCESSES, folder)
    return rank_results(folder, PROCESSES)


def test_every_rank_knows_its_rank_and_the_world(results):
    assert [int(r["rank"]) for r in results] == list(range(PROCESSES))
    assert {int(r["world"]) for r in results} == {PROCESSES}


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_all_reduce_gives_numpys_reduction_on_every_rank(results, op):
    inputs = expected_inputs()
    names = [name for name in results[0] if name.startswith(op + "_")]
    assert names
    for name in names:
        dtype = name.split("_", 1)[1]
        expected = REDUCTIONS[op](np.stack([i[dtype] for i in inputs]))
        for rank_result in results:
            got = rank_result[name]
            assert got.dtype == inputs[0][dtype].dtype and got.shape == expected.shape
            if got.dtype.kind == "f":
                tolerance = 1e-6 if got.dtype == np.float32 else 1e-14
                np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
            else:
                np.testing.assert_array_equal(got, expected)


def test_all_reduce_of_a_view_writes_through_to_what_it_views(results):
    inputs = expected_inputs()
    for rank, rank_result in enumerate(results):
        expected = inputs[rank]["float64"].copy()  # outside the view: this rank's own values
        expected[1:3] = np.sum([i["float64"][1:3] for i in inputs], axis=0)
        np.testing.assert_allclose(rank_result["view_base"], expected, rtol=1e-14)


@pytest.mark.parametrize("src", range(PROCESSES))
def test_broadcast_gives_every_rank_the_sources_values(results, src):
    source = expected_inputs()[src]["float32"]
    for rank_result in results:
        np.testing.assert_array_equal(rank_result[f"broadcast_{src}"], source)


def test_all_gather_puts_rank_ks_tensor_at_k_on_every_rank(results):
    expected = np.stack([i["int64"] for i in expected_inputs()])
    for rank_result in results:
        np.testing.assert_array_equal(rank_result["all_gather"], expected)


# -- a world of one: this process, for the refusals -------------------------------------------


@pytest.fixture
def world_of_one(monkeypatch):
    pytest.importorskip("mpi4py")
    for variable in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(variable, raising=False)  # restored (unset) after the test
    dist.init_process_group("mpi")
    yield
    dist.destroy_process_group()


@pytest.mark.usefixtures("world_of_one")
def test_in_a_world_of_one_each_collective_leaves_the_values():
    t = mg.tensor([1.5, -2.0])
    dist.all_reduce(t)
    dist.broadcast(t, 0)
    out = [mg.zeros(2)]
    dist.all_gather(out, t)
    np.testing.assert_array_equal(out[0].numpy(), [1.5, -2.0])
    np.testing.assert_array_equal(t.numpy(), [1.5, -2.0])
    assert dist.barrier() is None


@pytest.mark.usefixtures("world_of_one")
def test_all_reduce_bumps_the_version_so_a_graph_that_saved_it_refuses_backward():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    x = mg.tensor([3.0, 4.0])
    y = (w * x).sum()  # saves x
    dist.all_reduce(x)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


BAD_CALLS = [
    (lambda: dist.all_reduce(np.ones(2)), TypeError, "must be a minigrad Tensor; got ndarray"),
    (lambda: dist.all_reduce(mg.ones(2), op="sum"), TypeError, "op must be a ReduceOp"),
    (lambda: dist.all_reduce(mg.ones(2), op=dist.ReduceOp.BAND), mg.DTypeError, "float32"),
    (
        lambda: dist.all_reduce(mg.ones(2, dtype=mg.int64), op=dist.ReduceOp.AVG),
        mg.DTypeError,
        "AVG takes float tensors; got int64",
    ),
    (lambda: dist.broadcast(mg.ones(2), src=1), mg.ArgumentError, r"rank in \[0, 1\); got 1"),
    (lambda: dist.broadcast(mg.ones(2), src=-1), mg.ArgumentError, "got -1"),
    (lambda: dist.broadcast(mg.ones(2), src=0.0), TypeError, "src must be an int rank; got 0.0"),
    (lambda: dist.all_gather([], mg.ones(2)), mg.ArgumentError, "a list of 1 tensors .*got 0"),
    (lambda: dist.all_gather(mg.ones(2), mg.ones(2)), mg.ArgumentError, "got <class"),
    (lambda: dist.all_gather([mg.ones(3)], mg.ones(2)), mg.ShapeError, r"shape \(2,\).*\(3,\)"),
    (lambda: dist.all_gather([np.ones(2)], mg.ones(2)), TypeError, r"tensor_list\[0\]"),
    (lambda: dist.all_reduce(mg.ones(2), group="g"), mg.ArgumentError, "default group"),
]


@pytest.mark.usefixtures("world_of_one")
@pytest.mark.parametrize("call, error, message", BAD_CALLS)
def test_bad_arguments_are_refused_naming_what_was_expected(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("call", [lambda: dist.all_reduce(mg.ones(2)), dist.barrier])
def test_a_collective_before_init_process_group_says_so(call):
    with pytest.raises(dist.DistError, match="call minigrad.distributed.init_process_group"):
        call()
