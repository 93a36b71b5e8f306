"""optim.LBFGS against torch.optim.LBFGS: the same problem from the same start, written once for
both libraries, compared after every step() (parameters, the returned loss, the iteration and
evaluation counts and the state: direction, step length, history), in float64 to 1e-10 (1e-8 for
the MLP; float32 more loosely), with and without the strong-Wolfe line search."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from tests.optim_checks import flat_state_dict
from tests.parity import assert_close, assert_same_steps, copy_state_to_torch, to_numpy

# compares with PyTorch: skipped without it (pip install torch==2.13.0; CI installs it)
torch = pytest.importorskip("torch")


def rosenbrock(library, start):
    x = library.tensor(start, requires_grad=True)

    def loss():
        return ((1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2).sum()

    return [x], loss


def least_squares(library, start, seed=0):
    rng = np.random.default_rng(seed)
    a = library.tensor(rng.standard_normal((8, start.size)).astype(start.dtype))
    b = library.tensor(rng.standard_normal(8).astype(start.dtype))
    w = library.tensor(start, requires_grad=True)

    def loss():
        return ((a @ w - b) ** 2).mean()

    return [w], loss


def tiny_mlp(library, start, seed=1):
    rng = np.random.default_rng(seed)
    dtype = start.dtype
    x = library.tensor(rng.standard_normal((10, 3)).astype(dtype))
    y = library.tensor(np.sin(rng.standard_normal((10, 1))).astype(dtype))
    w1 = library.tensor(start.reshape(3, 4), requires_grad=True)
    b1 = library.tensor(np.zeros(4, dtype), requires_grad=True)
    w2 = library.tensor(rng.standard_normal((4, 1)).astype(dtype) * 0.5, requires_grad=True)

    def loss():
        return (((x @ w1 + b1).tanh() @ w2 - y) ** 2).mean()

    return [w1, b1, w2], loss


def run(library, problem, start, steps, **options):
    """steps calls of step(closure) -> per step: (parameters, loss, n_iter, func_evals, state)."""
    params, loss_of = problem(library, start)
    optimizer = library.optim.LBFGS(params, **options)

    def closure():
        optimizer.zero_grad()
        loss = loss_of()
        loss.backward()
        return loss

    history = []
    for _ in range(steps):
        returned = optimizer.step(closure).item()
        state = optimizer.state[params[0]]
        history.append(
            (
                [p.detach().numpy().copy() for p in params],
                returned,
                dict(
                    n_iter=state["n_iter"],
                    func_evals=state["func_evals"],
                    t=float(state.get("t", np.nan)),
                    d=to_numpy(state["d"]).copy() if "d" in state else None,
                    pairs=len(state.get("old_dirs", [])),
                ),
            )
        )
    return history


def assert_same_runs(ours, theirs, tolerance, dtype):
    assert_same_steps([h[0] for h in ours], [h[0] for h in theirs], tolerance, dtype)
    for step, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert_close(mine[1], reference[1], tolerance, f"step {step}: loss")
        ours_state, their_state = mine[2], reference[2]
        for key in ("n_iter", "func_evals", "pairs"):
            assert ours_state[key] == their_state[key], (step, key, ours_state, their_state)
        assert_close(ours_state["t"], their_state["t"], tolerance, f"step {step}: t")
        if their_state["d"] is not None:
            assert_close(ours_state["d"], their_state["d"], tolerance, f"step {step}: d")


PROBLEMS = {
    "rosenbrock": (rosenbrock, np.array([-1.5, 2.0])),
    "least_squares": (least_squares, np.linspace(-1, 1, 5)),
    "tiny_mlp": (tiny_mlp, np.linspace(-0.8, 0.9, 12)),
}
SETTINGS = {
    "defaults": {},
    "strong_wolfe": {"line_search_fn": "strong_wolfe"},
    "short_history": {"history_size": 2, "max_iter": 5, "lr": 0.5},
    "wolfe_short_history": {"history_size": 3, "max_iter": 7, "line_search_fn": "strong_wolfe"},
    "tolerances": {"tolerance_grad": 1e-3, "tolerance_change": 1e-4, "max_eval": 9},
}


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_float64_steps_match_torchs(problem, setting):
    make, start = PROBLEMS[problem]
    options = dict(SETTINGS[setting])
    if problem == "rosenbrock":  # 4 steps of 4 iterations: see the test below
        options["max_iter"] = min(options.get("max_iter", 20), 4)
    ours = run(mg, make, start, 4, **options)
    theirs = run(torch, make, start, 4, **options)
    # the MLP's products sum in the order of the machine's BLAS kernels (AVX2 or AVX-512: not the
    # same on every machine), and 80 iterations grow those last-bit differences to ~1e-10
    assert_same_runs(ours, theirs, 1e-8 if problem == "tiny_mlp" else 1e-10, np.float64)


@pytest.mark.parametrize("setting", ["defaults", "strong_wolfe"])
def test_float32_least_squares_matches_torchs(setting):
    start = np.linspace(-1, 1, 5).astype(np.float32)
    ours = run(mg, least_squares, start, 2, **SETTINGS[setting])
    theirs = run(torch, least_squares, start, 2, **SETTINGS[setting])
    assert_same_steps([h[0] for h in ours], [h[0] for h in theirs], 1e-4, np.float32)


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_long_rosenbrock_runs_reach_the_minimum_as_torchs(line_search):
    """Along Rosenbrock's curved valley a difference in the last bit of a loss (torch and minigrad
    sum and square in their own order) grows about tenfold every few iterations, so after dozens
    of iterations the points agree to 1e-6, while every count of iterations and evaluations is
    still the same: one path, not two."""
    options = {"line_search_fn": line_search, "max_iter": 25}
    ours = run(mg, rosenbrock, np.array([-1.2, 1.0]), 8, **options)
    theirs = run(torch, rosenbrock, np.array([-1.2, 1.0]), 8, **options)
    assert_same_runs(ours, theirs, 1e-6, np.float64)
    assert_close(ours[-1][0][0], np.array([1.0, 1.0]), 1e-4)  # as near as tolerance_change lets


@settings(max_examples=15, deadline=None)
@given(
    start=st.lists(st.floats(-2, 2), min_size=2, max_size=2),
    history_size=st.integers(1, 6),
    line_search=st.sampled_from([None, "strong_wolfe"]),
)
def test_rosenbrock_from_any_start_matches_torch(start, history_size, line_search):
    start = np.array(start)
    options = {"history_size": history_size, "max_iter": 6, "line_search_fn": line_search}
    ours = run(mg, rosenbrock, start, 2, **options)
    theirs = run(torch, rosenbrock, start, 2, **options)
    assert_same_runs(ours, theirs, 1e-8, np.float64)


def test_a_start_at_the_minimum_returns_at_once():
    ours = run(mg, rosenbrock, np.array([1.0, 1.0]), 2)
    theirs = run(torch, rosenbrock, np.array([1.0, 1.0]), 2)
    assert [h[2]["func_evals"] for h in ours] == [h[2]["func_evals"] for h in theirs] == [1, 2]
    assert [h[2]["n_iter"] for h in ours] == [0, 0]


def lbfgs_on_least_squares(start, **options):
    """(the parameter, an LBFGS on it, its closure) for the least squares problem from start."""
    params, loss_of = least_squares(mg, start)
    optimizer = mg.optim.LBFGS(params, **options)

    def closure():
        optimizer.zero_grad()
        loss = loss_of()
        loss.backward()
        return loss

    return params[0], optimizer, closure


def test_state_dict_round_trip_continues_the_same_trajectory():
    weight, optimizer, closure = lbfgs_on_least_squares(np.linspace(-1, 1, 5), history_size=3)
    optimizer.step(closure)
    saved = optimizer.state_dict()
    assert saved["param_groups"][0]["max_eval"] == 25
    assert saved["state"][0]["old_dirs"].shape == (3, 5)
    assert saved["state"][0]["n_iter"] == optimizer.state[weight]["n_iter"] > 1

    twin_weight, twin, twin_closure = lbfgs_on_least_squares(
        weight.detach().numpy().copy(), history_size=3
    )
    twin.load_state_dict(saved)
    for _ in range(2):
        optimizer.step(closure)
        twin.step(twin_closure)
    np.testing.assert_array_equal(twin_weight.numpy(), weight.numpy())
    assert twin.state[0]["func_evals"] == optimizer.state[0]["func_evals"]


@pytest.mark.parametrize(
    "options, error, words",
    [
        ({"lr": -1.0}, ValueError, ["lr", "-1"]),
        ({"max_iter": 0}, ValueError, ["max_iter", "0"]),
        ({"max_iter": 2.5}, TypeError, ["max_iter", "2.5"]),
        ({"history_size": 0}, ValueError, ["history_size"]),
        ({"tolerance_grad": -1e-3}, ValueError, ["tolerance_grad"]),
        ({"line_search_fn": "armijo"}, ValueError, ["strong_wolfe", "armijo"]),
    ],
)
def test_bad_settings_are_refused_naming_them(options, error, words):
    with pytest.raises(error) as raised:
        mg.optim.LBFGS([mg.zeros(2, requires_grad=True)], **options)
    for word in words:
        assert word in str(raised.value)


def test_groups_mixed_dtypes_a_missing_closure_and_a_bad_state_are_refused():
    a, b = mg.zeros(2, requires_grad=True), mg.zeros(3, requires_grad=True)
    with pytest.raises(ValueError, match="per-parameter options"):
        mg.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(TypeError, match="one float dtype"):
        mg.optim.LBFGS([a, mg.zeros(2, dtype=mg.float64, requires_grad=True)])
    optimizer = mg.optim.LBFGS([a, b])
    with pytest.raises(TypeError, match="closure"):
        optimizer.step()
    with pytest.raises(ValueError, match="length 5"):
        optimizer.load_state_dict({**flat_state_dict(optimizer), "state.0.d": np.zeros(4)})


def sine_waves(steps=12, sequences=3):
    """time_sequence_prediction's data, small: phase-shifted sines, float64."""
    phases = np.arange(sequences)[:, None] * 0.7
    return np.sin(np.arange(steps)[None, :] * 0.4 + phases)


def sequence_model(library, hidden=6):
    """Two stacked LSTM cells and a linear read-out, stepped over time with the state passed
    on, as time_sequence_prediction's Sequence."""
    nn = library.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, hidden)
            self.lstm2 = nn.LSTMCell(hidden, hidden)
            self.linear = nn.Linear(hidden, 1)

        def forward(self, input):
            outputs = []
            zeros = library.zeros(input.size(0), hidden, dtype=library.double)
            h_t, c_t, h_t2, c_t2 = zeros, zeros, zeros, zeros
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                outputs.append(self.linear(h_t2))
            return library.cat(outputs, dim=1)

    return Sequence().double()


def test_an_lstm_sequence_model_trains_as_torchs_time_sequence_prediction():
    mg.manual_seed(0)
    ours = sequence_model(mg)
    theirs = copy_state_to_torch(ours, sequence_model(torch))
    waves = sine_waves()
    losses, weights = {}, {}
    for name, library, model in (("minigrad", mg, ours), ("torch", torch, theirs)):
        inputs, target = library.tensor(waves[:, :-1]), library.tensor(waves[:, 1:])
        criterion = library.nn.MSELoss()
        optimizer = library.optim.LBFGS(model.parameters(), lr=0.8, max_iter=6)

        def closure():
            optimizer.zero_grad()
            loss = criterion(model(inputs), target)
            loss.backward()
            return loss

        losses[name] = [optimizer.step(closure).item() for _ in range(3)]
        weights[name] = {k: to_numpy(v) for k, v in model.state_dict().items()}
    assert_close(np.array(losses["minigrad"]), np.array(losses["torch"]), 1e-9)
    assert losses["minigrad"][-1] < losses["minigrad"][0]
    for key, value in weights["torch"].items():
        assert_close(weights["minigrad"][key], value, 1e-8, key)
