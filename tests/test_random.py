"""Random numbers (minigrad/random.py) as torch code draws them: a generator of its own repeats
and leaves the global one alone, manual_seed returns the global generator and takes torch's seeds,
bernoulli and normal draw the right distribution, the RNG state saved and set draws the same
numbers again (a damaged state is refused), and makemore-style sampling runs under torch and
minigrad alike.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

DRAWS = {
    "randn": lambda g: mg.randn(4, 3, generator=g),
    "rand": lambda g: mg.rand(5, generator=g),
    "randint": lambda g: mg.randint(0, 27, (6,), generator=g),
    "randperm": lambda g: mg.randperm(9, generator=g),
    "multinomial": lambda g: mg.multinomial(
        mg.tensor([0.1, 0.6, 0.3]), 4, replacement=True, generator=g
    ),
    "multinomial without replacement": lambda g: mg.multinomial(
        mg.tensor([0.1, 0.6, 0.3]), 3, generator=g
    ),
    "init.normal_": lambda g: nn.init.normal_(
        nn.Parameter(np.empty((3, 3), np.float32)), generator=g
    ),
    "init.uniform_": lambda g: nn.init.uniform_(
        nn.Parameter(np.empty(4, np.float32)), -1, 1, generator=g
    ),
    "init.xavier_uniform_": lambda g: nn.init.xavier_uniform_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.kaiming_uniform_": lambda g: nn.init.kaiming_uniform_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.xavier_normal_": lambda g: nn.init.xavier_normal_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.kaiming_normal_": lambda g: nn.init.kaiming_normal_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.trunc_normal_": lambda g: nn.init.trunc_normal_(
        nn.Parameter(np.empty(5, np.float32)), generator=g
    ),
}


@pytest.mark.parametrize("name", DRAWS)
def test_a_generator_of_its_own_repeats_and_leaves_the_global_one_alone(name):
    draw = DRAWS[name]
    first = draw(mg.Generator().manual_seed(2147483647)).numpy()
    again = draw(mg.Generator().manual_seed(2147483647)).numpy()
    other = draw(mg.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(first, again)
    # a short permutation may repeat by chance
    assert not np.array_equal(first, other) or first.size <= 3
    mg.manual_seed(0)
    expected = mg.randn(3).numpy()
    mg.manual_seed(0)
    draw(mg.Generator().manual_seed(1))
    # the global generator did not move
    np.testing.assert_array_equal(mg.randn(3).numpy(), expected)


def test_manual_seed_returns_the_global_generator_and_takes_torchs_seeds():
    g = mg.manual_seed(123)
    assert isinstance(g, mg.Generator) and g is mg.default_generator and g.initial_seed() == 123
    first = mg.randn(3, generator=g).numpy()
    mg.manual_seed(123)
    # drawing through it is drawing from the global one
    np.testing.assert_array_equal(mg.randn(3).numpy(), first)
    for seed in (-1, 2**64 - 1, 0):
        assert mg.Generator().manual_seed(seed).initial_seed() == seed % 2**64
    fresh = mg.Generator()
    assert fresh.seed() == fresh.initial_seed() and fresh.device == mg.device("cpu")
    with pytest.raises(ValueError, match=r"seed must be in \[-2\*\*63, 2\*\*64\)"):
        mg.manual_seed(2**64)
    with pytest.raises(TypeError, match="seed must be an integer; got 1.5"):
        mg.Generator().manual_seed(1.5)
    with pytest.raises(TypeError, match="generator must be an mg.Generator; got Generator"):
        mg.randn(2, generator=np.random.default_rng(0))
    with pytest.raises(ValueError, match="CPU only"):
        mg.Generator(device="cuda")


def test_makemore_style_sampling_runs_under_torch_and_minigrad():
    """Karpathy's makemore draws everything from one explicit generator; the same code runs here."""
    torch = pytest.importorskip("torch")

    def sample(B, count=5):
        g = B.Generator().manual_seed(2147483647)
        counts = B.randint(1, 10, (27, 27), generator=g).float()
        probs = counts / counts.sum(1, keepdim=True)
        names = []
        for _ in range(count):
            index, out = 0, []
            while len(out) < 20:
                index = B.multinomial(
                    probs[index], num_samples=1, replacement=True, generator=g
                ).item()
                if index == 0:
                    break
                out.append(index)
            names.append(out)
        return names, probs.shape

    ours, theirs = sample(mg), sample(torch)
    assert ours[1] == tuple(theirs[1]) and len(ours[0]) == len(theirs[0])
    assert all(0 < i < 27 for name in ours[0] for i in name)


def test_select_pow_bernoulli_and_normal():
    torch = pytest.importorskip("torch")
    x = np.arange(24.0).reshape(2, 3, 4)
    for dim, index in ((0, 1), (1, -1), (-1, 2)):
        np.testing.assert_array_equal(
            mg.tensor(x).select(dim, index).numpy(), torch.tensor(x).select(dim, index).numpy()
        )
    y = mg.tensor([1.0, 2.0, 3.0])
    y.pow_(2)
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0, 9.0])
    g = mg.Generator().manual_seed(0)
    draws = mg.bernoulli(mg.full((200, 100), 0.3), generator=g)
    assert draws.dtype == np.float32 and set(np.unique(draws.numpy())) <= {0.0, 1.0}
    assert draws.numpy().mean() == pytest.approx(0.3, abs=0.01)
    assert mg.bernoulli(mg.zeros(5), p=1.0).numpy().tolist() == [1.0] * 5
    spread = mg.normal(mg.full((300, 100), 2.0), 0.5, generator=g).numpy()
    assert spread.mean() == pytest.approx(2.0, abs=0.01) and spread.std() == pytest.approx(
        0.5, rel=0.02
    )
    assert mg.normal(0.0, 1.0, size=(2, 3)).shape == (2, 3)
    with pytest.raises(mg.errors.ArgumentError, match="give size"):
        mg.normal(0.0, 1.0)
    with pytest.raises(mg.errors.ArgumentError, match="probabilities must be in"):
        mg.bernoulli(mg.tensor([1.5]))


def test_rng_state_saved_and_set_draws_the_same_numbers_again(tmp_path):
    """mg.get_rng_state / set_rng_state (torch's names) through a checkpoint file,
    Generator.get_state
    / set_state, and mg.parallel's parts (whose dropout draws from generators spawned per step)."""
    mg.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = mg.randn(8, 4)

    def draws():
        loss = mg.parallel.forward_backward(lambda batch: model(batch).sum(), x, parts=2).item()
        return mg.randn(4).numpy().tolist(), nn.Dropout(0.5)(mg.ones(16)).numpy().tolist(), loss

    draws()  # a training step before the checkpoint: its parts' generators were spawned already
    state = mg.get_rng_state()
    assert isinstance(state, mg.Tensor) and state.dtype == mg.uint8 and state.ndim == 1
    mg.save({"rng": state}, tmp_path / "rng.npz")
    first = draws()
    mg.set_rng_state(mg.load(tmp_path / "rng.npz")["rng"])
    assert draws() == first
    generator = mg.Generator()  # a fresh random seed, not a manual one
    mine = generator.get_state()
    expected = mg.rand(3, generator=generator).numpy()
    again = mg.Generator().set_state(mine)
    np.testing.assert_array_equal(mg.rand(3, generator=again).numpy(), expected)
    assert again.initial_seed() == generator.initial_seed()


def test_a_damaged_rng_state_is_refused_and_changes_nothing():
    state = mg.manual_seed(0).get_state()
    expected = mg.randn(3).numpy()
    mg.manual_seed(0)
    wrong_tag, even_increment = state.copy(), state.copy()
    wrong_tag[0] = 0
    even_increment[8 + 5 * 8] ^= 1  # the low byte of PCG64's increment, which must be odd
    for bad, message in (
        (wrong_tag, "not a minigrad generator state"),
        (state[:10], "80 bytes.*shape \\(10,\\)"),
        (state.astype(np.int64), "uint8 array.*got int64"),
        (even_increment, "increment must be odd"),
        ("state", "uint8 array.*got <U5"),
    ):
        with pytest.raises(ValueError, match=message):
            mg.set_rng_state(bad)
    np.testing.assert_array_equal(mg.randn(3).numpy(), expected)
