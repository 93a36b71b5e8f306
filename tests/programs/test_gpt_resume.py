"""A character GPT trained, checkpointed and resumed the way nanoGPT's train.py does it, one
source run with `torch` and with minigrad in its place.

The program: encode a text by characters, draw (x, y) batches of block_size windows, warm up and
cosine-decay the rate by iter_num, evaluate every eval_interval under no_grad in eval mode, and
when the validation loss improves save {'model', 'optimizer', 'model_args', 'iter_num',
'best_val_loss', 'config'} with the framework's save. Resuming loads that file with
load(path, map_location=device) (device 'cuda' if cuda.is_available() else 'cpu'), rebuilds the
model from model_args, loads both state dicts and continues from iter_num. The resumed run gives
the uninterrupted run's losses and weights in each framework, and the two frameworks agree step
by step, in float64, from the same starting weights and the same batches.
"""

import math

import numpy as np
import pytest
from parity import assert_close
from programs.test_torch_style_gpt import gpt_classes

import minigrad as mg

TEXT = (
    "first citizen: before we proceed any further, hear me speak. all: speak, speak. "
    "first citizen: you are all resolved rather to die than to famish? all: resolved. resolved."
)
CONFIG = dict(
    dataset="characters",
    batch_size=4,
    block_size=12,
    learning_rate=3e-3,
    min_lr=3e-4,
    warmup_iters=3,
    lr_decay_iters=12,
    eval_interval=4,
    eval_batches=2,
    weight_decay=0.1,
    beta1=0.9,
    beta2=0.95,
    grad_clip=1.0,
    decay_lr=True,
)


def get_lr(it, config):
    """nanoGPT's schedule: linear warm-up, cosine decay to min_lr, then min_lr."""
    if it < config["warmup_iters"]:
        return config["learning_rate"] * (it + 1) / (config["warmup_iters"] + 1)
    if it > config["lr_decay_iters"]:
        return config["min_lr"]
    ratio = (it - config["warmup_iters"]) / (config["lr_decay_iters"] - config["warmup_iters"])
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return config["min_lr"] + coeff * (config["learning_rate"] - config["min_lr"])


def train(torch, F, out_dir, max_iters, init_from, initial_state=None):
    """nanoGPT's train.py loop -> (losses of the iterations run, {iter_num: val loss}, model).
    init_from 'scratch' starts from initial_state (numpy arrays by name); 'resume' from
    out_dir/ckpt.pt. Batches are drawn by a numpy generator seeded with (split, iter_num), so a
    resumed run sees the batches the uninterrupted one saw, and so does the other framework."""
    GPT = gpt_classes(torch, F)
    config = dict(CONFIG)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    chars = sorted(set(TEXT))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[ch] for ch in TEXT], dtype=torch.long)
    split = int(0.8 * len(data))
    splits = {"train": data[:split], "val": data[split:]}
    block_size, batch_size = config["block_size"], config["batch_size"]

    def get_batch(name, seed):
        source = splits[name]
        rng = np.random.default_rng([0 if name == "train" else 1, seed])
        ix = rng.integers(0, len(source) - block_size, batch_size)
        x = torch.stack([source[i : i + block_size] for i in ix])
        y = torch.stack([source[i + 1 : i + 1 + block_size] for i in ix])
        return x.to(device), y.to(device)

    @torch.no_grad()
    def estimate_loss(model, it):
        model.eval()
        losses = torch.zeros(config["eval_batches"], dtype=torch.float64)
        for k in range(config["eval_batches"]):
            _, loss = model(*get_batch("val", 1000 * it + k))
            losses[k] = loss.item()
        model.train()
        return losses.mean().item()

    iter_num, best_val_loss = 0, 1e9
    model_args = dict(vocab_size=len(chars), block_size=block_size, n_embd=16, n_head=2, n_layer=2)
    if init_from == "scratch":
        model = GPT(**model_args).double()
        model.load_state_dict({name: torch.tensor(value) for name, value in initial_state.items()})
        checkpoint = None
    else:
        checkpoint = torch.load(f"{out_dir}/ckpt.pt", map_location=device)
        for key in ["n_layer", "n_head", "n_embd", "block_size", "vocab_size"]:
            model_args[key] = checkpoint["model_args"][key]
        model = GPT(**model_args).double()
        state_dict = checkpoint["model"]
        unwanted_prefix = "_orig_mod."  # what torch.compile adds to the names
        for key in list(state_dict.keys()):
            if key.startswith(unwanted_prefix):
                state_dict[key[len(unwanted_prefix) :]] = state_dict.pop(key)
        model.load_state_dict(state_dict)
        iter_num, best_val_loss = checkpoint["iter_num"], checkpoint["best_val_loss"]
    model.to(device)
    optimizer = model.configure_optimizers(
        config["weight_decay"], config["learning_rate"], (config["beta1"], config["beta2"])
    )
    if checkpoint is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    checkpoint = None  # free it, as nanoGPT does

    losses, val_losses = [], {}
    while iter_num < max_iters:
        lr = get_lr(iter_num, config) if config["decay_lr"] else config["learning_rate"]
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        if iter_num % config["eval_interval"] == 0 and iter_num > 0:
            val_losses[iter_num] = val_loss = estimate_loss(model, iter_num)
            if val_loss < best_val_loss:
                best_val_loss = val_loss
                checkpoint = {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "model_args": model_args,
                    "iter_num": iter_num,
                    "best_val_loss": best_val_loss,
                    "config": config,
                }
                torch.save(checkpoint, f"{out_dir}/ckpt.pt")
        _, loss = model(*get_batch("train", iter_num))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_clip"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        iter_num += 1
    return losses, val_losses, model


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each framework run twice from the same weights: 9 iterations straight, and 5 (a checkpoint
    written at iteration 4) then resumed to 9 from the file."""
    torch = pytest.importorskip("torch")
    import minigrad.nn.functional as mg_functional
    import torch.nn.functional as torch_functional

    mg.manual_seed(0)
    initial = gpt_classes(mg, mg_functional)(vocab_size=len(set(TEXT)), n_embd=16, n_head=2)
    initial = {
        name: value.numpy().astype(np.float64) for name, value in initial.state_dict().items()
    }
    results = {}
    for name, library, functional in (
        ("mg", mg, mg_functional),
        ("torch", torch, torch_functional),
    ):
        straight = tmp_path_factory.mktemp(f"{name}_straight")
        interrupted = tmp_path_factory.mktemp(f"{name}_interrupted")
        results[name] = dict(
            straight=train(library, functional, straight, 9, "scratch", initial),
            first=train(library, functional, interrupted, 5, "scratch", initial),
        )
        # read before the resumed run, which saves again when its validation loss improves
        results[name]["checkpoint"] = library.load(f"{interrupted}/ckpt.pt", map_location="cpu")
        results[name]["resumed"] = train(library, functional, interrupted, 9, "resume")
    return results


@pytest.mark.parametrize("name", ["mg", "torch"])
def test_a_resumed_run_equals_the_uninterrupted_one(runs, name):
    run = runs[name]
    straight_losses, straight_val, straight_model = run["straight"]
    first_losses, first_val, _ = run["first"]
    resumed_losses, resumed_val, resumed_model = run["resumed"]
    assert first_losses == straight_losses[:5]
    assert len(resumed_losses) == 5  # iterations 4 to 8: the checkpoint was taken before step 4
    np.testing.assert_array_equal(resumed_losses, straight_losses[4:])
    assert first_val == {4: straight_val[4]}
    assert resumed_val == straight_val  # the resumed run evaluates at 4 again, as nanoGPT's does
    resumed_state = resumed_model.state_dict()
    for key, value in straight_model.state_dict().items():
        np.testing.assert_array_equal(resumed_state[key].numpy(), value.numpy(), err_msg=key)


@pytest.mark.parametrize("name", ["mg", "torch"])
def test_the_checkpoint_keeps_what_nanogpt_saves(runs, name):
    checkpoint = runs[name]["checkpoint"]
    assert checkpoint["iter_num"] == 4 and type(checkpoint["iter_num"]) is int
    assert type(checkpoint["best_val_loss"]) is float
    assert checkpoint["best_val_loss"] == runs[name]["first"][1][4]
    assert dict(checkpoint["model_args"]) == dict(
        vocab_size=len(set(TEXT)), block_size=12, n_embd=16, n_head=2, n_layer=2
    )
    assert dict(checkpoint["config"]) == CONFIG  # the strings, floats, ints and bool as saved
    assert "lm_head.weight" in checkpoint["model"]


def test_the_two_frameworks_agree_step_by_step(runs):
    ours, theirs = runs["mg"], runs["torch"]
    for part in ("straight", "first", "resumed"):
        assert_close(np.array(ours[part][0]), np.array(theirs[part][0]), 1e-9, f"{part} losses")
        assert ours[part][1].keys() == theirs[part][1].keys()
        for it, value in ours[part][1].items():
            assert_close(value, theirs[part][1][it], 1e-9, f"{part} val loss at {it}")
    losses = theirs["straight"][0]
    assert losses[-1] < losses[0] - 0.1  # it learned something
    our_model, their_model = ours["resumed"][2], theirs["resumed"][2]
    their_state = their_model.state_dict()
    for key, value in our_model.state_dict().items():
        assert_close(value, their_state[key], 1e-8, key)

    # the resumed models continue a prompt greedily, token for token alike
    torch = pytest.importorskip("torch")
    our_model.eval()
    their_model.eval()
    prompt = np.array([[3, 1, 4]])
    np.testing.assert_array_equal(
        our_model.generate(mg.tensor(prompt), 10, top_k=1).numpy(),
        their_model.generate(torch.tensor(prompt), 10, top_k=1).numpy(),
    )
