"""A minGPT-style Trainer, one source run with `torch` and with minigrad in its place.

The program: a Dataset of sorting problems (a GPT reads digits and writes them sorted; the loss
ignores the positions of the question, target -1), a Trainer that builds
`DataLoader(ds, sampler=RandomSampler(ds, replacement=True, num_samples=int(1e10)),
shuffle=False, pin_memory=True, batch_size=..., num_workers=0)`, steps with next() on an
iterator, restarts the iterator on StopIteration, clips, steps AdamW and triggers 'on_batch_end'
callbacks until max_iters. The GPT is the nanoGPT-layout model of test_torch_style_gpt.py.

minigrad's and torch's generators draw different indices from the same seed, so the step-by-step
comparison gives both frameworks one index sequence through a sampler written here (numpy draws
it), as a torch user would; a short one makes the loader run out and the Trainer restart it. The
minGPT loader itself (draws from a seeded generator of the framework's own, 1e10 samples) is run
in each framework, which must repeat itself from the same seed and learn.
"""

import numpy as np
import pytest
from parity import assert_close, copy_state_to_torch
from programs.test_torch_style_gpt import gpt_classes

import minigrad as mg

torch = pytest.importorskip("torch")
# torch says pin_memory does nothing without an accelerator; minGPT asks for it all the same
pytestmark = pytest.mark.filterwarnings("ignore:'pin_memory' argument:UserWarning")

LENGTH, DIGITS = 5, 3


def sort_dataset(torch):
    class SortDataset(torch.utils.data.Dataset):
        """Problem i: LENGTH digits below DIGITS, then the same sorted; x is all but the last
        token, y all but the first, with -1 where y is still part of the question."""

        def __init__(self, size):
            self.size = size

        def __len__(self):
            return self.size

        def __getitem__(self, idx):
            digits = np.random.default_rng(idx).integers(0, DIGITS, LENGTH)
            cat = torch.tensor(np.concatenate([digits, np.sort(digits)]), dtype=torch.long)
            x, y = cat[:-1].clone(), cat[1:].clone()
            y[: LENGTH - 1] = -1
            return x, y

    return SortDataset(64)


def numpy_sampler(torch):
    class NumpyRandomSampler(torch.utils.data.Sampler):
        """num_samples indices drawn with replacement by a numpy generator, anew on each pass."""

        def __init__(self, data_source, num_samples, seed):
            self.n, self.num_samples = len(data_source), num_samples
            self.rng = np.random.default_rng(seed)
            self.drawn = []

        def __iter__(self):
            indices = self.rng.integers(0, self.n, self.num_samples).tolist()
            self.drawn.extend(indices)
            return iter(indices)

        def __len__(self):
            return self.num_samples

    return NumpyRandomSampler


def trainer_class(torch):
    class Trainer:
        def __init__(self, config, model, train_dataset, sampler=None):
            self.config, self.model, self.train_dataset = config, model, train_dataset
            self.sampler = sampler
            self.callbacks = {}
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
            self.model = self.model.to(self.device)
            self.iter_num, self.restarts = 0, 0

        def add_callback(self, onevent, callback):
            self.callbacks.setdefault(onevent, []).append(callback)

        def trigger_callbacks(self, onevent):
            for callback in self.callbacks.get(onevent, []):
                callback(self)

        def run(self):
            model, config = self.model, self.config
            self.optimizer = model.configure_optimizers(
                config["weight_decay"], config["learning_rate"], config["betas"]
            )
            sampler = self.sampler or torch.utils.data.RandomSampler(
                self.train_dataset,
                replacement=True,
                num_samples=int(1e10),
                generator=torch.Generator().manual_seed(config["seed"]),
            )
            train_loader = torch.utils.data.DataLoader(
                self.train_dataset,
                sampler=sampler,
                shuffle=False,
                pin_memory=True,
                batch_size=config["batch_size"],
                num_workers=config["num_workers"],
            )
            model.train()
            data_iter = iter(train_loader)
            while True:
                try:
                    batch = next(data_iter)
                except StopIteration:
                    self.restarts += 1
                    data_iter = iter(train_loader)
                    batch = next(data_iter)
                x, y = [t.to(self.device) for t in batch]
                _, self.loss = model(x, y)
                model.zero_grad(set_to_none=True)
                self.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_norm_clip"])
                self.optimizer.step()
                self.trigger_callbacks("on_batch_end")
                self.iter_num += 1
                if config["max_iters"] is not None and self.iter_num >= config["max_iters"]:
                    break

    return Trainer


CONFIG = dict(
    seed=3,
    batch_size=8,
    num_workers=0,
    max_iters=10,
    learning_rate=5e-3,
    betas=(0.9, 0.95),
    weight_decay=0.1,
    grad_norm_clip=1.0,
)


def new_gpt(library):
    functional = library.nn.functional
    return gpt_classes(library, functional)(
        vocab_size=DIGITS, block_size=2 * LENGTH - 1, n_embd=16, n_head=2, n_layer=1
    ).double()


def run(torch, model, sampler=None):
    """The Trainer on the sort problems -> (loss per step, times it restarted the loader)."""
    trainer = trainer_class(torch)(CONFIG, model, sort_dataset(torch), sampler)
    losses = []
    trainer.add_callback("on_batch_end", lambda trainer: losses.append(trainer.loss.item()))
    trainer.run()
    return losses, trainer.restarts


def test_the_trainer_gives_the_same_steps_over_the_same_indices():
    mg.manual_seed(0)
    ours = new_gpt(mg)
    theirs = copy_state_to_torch(ours, new_gpt(torch), np.float64)
    # 20 indices a pass, batches of 8: each pass gives 8, 8, 4, then the loader is restarted
    our_sampler = numpy_sampler(mg)(range(64), num_samples=20, seed=1)
    their_sampler = numpy_sampler(torch)(range(64), num_samples=20, seed=1)
    our_losses, our_restarts = run(mg, ours, our_sampler)
    their_losses, their_restarts = run(torch, theirs, their_sampler)
    assert our_restarts == their_restarts == 3  # passes of 3, 3, 3 and 1 batches
    assert our_sampler.drawn == their_sampler.drawn and len(their_sampler.drawn) == 80
    assert_close(np.array(our_losses), np.array(their_losses), 1e-9, "losses")
    assert their_losses[-1] < their_losses[0] - 0.1  # it learned something
    their_state = theirs.state_dict()
    for name, value in ours.state_dict().items():
        assert_close(value, their_state[name], 1e-8, name)


@pytest.mark.parametrize("library", [mg, torch], ids=["minigrad", "torch"])
def test_mingpt_s_endless_random_sampler_repeats_itself_from_a_seed(library):
    library.manual_seed(0)
    first = new_gpt(library)
    state = {name: value.clone() for name, value in first.state_dict().items()}
    second = new_gpt(library)
    second.load_state_dict(state)
    losses, restarts = run(library, first)
    again, _ = run(library, second)
    assert restarts == 0  # 1e10 samples: the loader never runs out
    assert len(losses) == CONFIG["max_iters"]
    np.testing.assert_array_equal(losses, again)
    assert losses[-1] < losses[0] - 0.1
