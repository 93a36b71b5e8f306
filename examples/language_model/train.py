r"""Train a small GPT-style character language model on the IMDB review texts with minigrad.

    python examples/language_model/train.py                   # the default run: 1,000 steps, ~5 min
    python examples/language_model/train.py --quick           # a one-minute demo (small model)
    python examples/language_model/train.py --time-budget 20  # train for 20 minutes
    python examples/language_model/train.py --overwrite       # again, over the earlier run
    python examples/language_model/train.py --generate "This movie" \
        --checkpoint runs/language_model/best.npz

Data as in the sentiment example (--data: the IMDB tarball or folder; else the cache folder).
Every position of each context is trained in one forward pass (the causal mask keeps each
position from seeing its own answer). AdamW, gradient clipping at norm 1.0, a linear warm-up
then cosine decay; validation loss in nats and bits per character at intervals; the best
checkpoint saved atomically (mg.save). At the end, and with --generate: samples (temperature,
top-k) and a grid of every head's attention weights for a prompt (attention.svg).
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from tqdm import tqdm

if __package__ in (None, ""):  # run as a script: make `examples.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import minigrad as mg  # noqa: E402
import minigrad.onnx  # noqa: E402, F401  (mg.onnx: --export-onnx)
from examples.language_model import corpus  # noqa: E402
from examples.language_model.attention_grid import attention_grid_svg, attention_maps  # noqa: E402
from examples.language_model.generate import NonFiniteLogits, generate  # noqa: E402
from examples.language_model.model import CONFIG_KEYS, CharTransformer  # noqa: E402
from examples.language_model.model import parameter_count, state_shapes  # noqa: E402
from examples.sentiment.data import DataNotFoundError  # noqa: E402

DEFAULTS = dict(
    steps=1000,
    batch_size=32,
    context=128,
    model_dim=128,
    num_heads=4,
    num_layers=4,
    ff_dim=512,
    eval_every=100,
    eval_batches=20,
    warmup=100,
)
QUICK = dict(
    steps=600,
    batch_size=32,
    context=64,
    model_dim=64,
    num_heads=4,
    num_layers=2,
    ff_dim=256,
    eval_every=100,
    eval_batches=4,
    warmup=50,
)
ATTENTION_PROMPT = "This movie was not bad at all."
LN2 = math.log(2)
# The largest value of each integer setting: past it a value is a typo, or a run that cannot fit
# in memory or time, refused before anything is read or written (README, "Settings"). Within
# them the memory the model and a batch take is estimated too (memory_needed).
LARGEST = {
    "steps": 10**7,
    "batch_size": 4096,
    "context": 4096,
    "model_dim": 4096,
    "num_heads": 4096,
    "num_layers": 64,
    "ff_dim": 16384,
    "eval_every": 10**9,
    "eval_batches": 10**4,
    "warmup": 10**7,
    "samples": 100,
    "sample_length": 100_000,
    "top_k": 0x110000,  # at most every character there is
    "seed": 2**64 - 1,  # mg.manual_seed's range (and numpy's seeds are >= 0)
}
MAX_LR = 1.0  # AdamW's steps are about lr in size: past 1 the weights only jump about
MAX_MINUTES = 100_000  # --time-budget, about ten weeks
RUN_FILES = ("best.npz", "log.json", "attention.svg")  # what a training run writes in --out


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", help="IMDB tarball or extracted folder (default: the cache folder, else download)"
    )
    parser.add_argument(
        "--out", default="runs/language_model", help="folder for the checkpoint, samples, pictures"
    )

    def sized(name, help=""):
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=int,
            default=None,
            help=f"{help} (default {DEFAULTS[name]}; with --quick {QUICK[name]})".strip(),
        )

    sized("steps")
    parser.add_argument(
        "--time-budget",
        type=float,
        metavar="MINUTES",
        help="stop after this many minutes (the schedule is fitted to the steps that fit)",
    )
    for name in ("batch_size", "context", "model_dim", "num_heads", "num_layers", "ff_dim"):
        sized(name)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--positions", choices=("learned", "sinusoidal"), default="learned")
    parser.add_argument(
        "--lr", type=float, default=3e-3, help="peak learning rate (after the warm-up)"
    )
    parser.add_argument("--weight-decay", type=float, default=0.01)
    sized("warmup", "warm-up steps (linear, then cosine decay)")
    parser.add_argument(
        "--min-lr-ratio", type=float, default=0.1, help="the cosine decays to lr * this"
    )
    parser.add_argument(
        "--clip", type=float, default=1.0, help="max global gradient norm (0: no clipping)"
    )
    sized("eval_every")
    sized("eval_batches", "validation batches per evaluation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="one-minute demo: a small model, 600 steps"
    )
    parser.add_argument(
        "--generate", metavar="PROMPT", help="sample from --checkpoint instead of training"
    )
    parser.add_argument("--checkpoint", help="a best.npz written by training")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--sample-length", type=int, default=300)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--attention-prompt", default=ATTENTION_PROMPT)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the results of an earlier run in --out (without it such a run is refused)",
    )
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--export-onnx",
        metavar="PATH",
        help="also write the best model as ONNX (docs/onnx.md): input ids (batch, time), "
        "output logits (batch, time, vocabulary); time at most --context",
    )
    args = parser.parse_args(argv)
    if args.export_onnx is not None:
        if args.generate is not None:
            parser.error("--export-onnx writes the model a training run makes; not with --generate")
        problem = mg.onnx.destination_problem(args.export_onnx)
        if problem:
            parser.error(f"--export-onnx: {problem}")
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:  # what the user set wins, --quick or not
            setattr(args, name, value)
    if args.generate is not None and not args.checkpoint:
        parser.error("--generate needs --checkpoint PATH (a best.npz written by training)")
    for name, largest in LARGEST.items():
        smallest = 0 if name in ("warmup", "samples", "seed") else 1
        if not smallest <= getattr(args, name) <= largest:
            parser.error(
                f"--{name.replace('_', '-')} must be an integer from {smallest} to {largest:,}; "
                f"got {getattr(args, name)}"
            )
    if args.model_dim % args.num_heads:
        parser.error(
            f"--model-dim ({args.model_dim}) must be divisible by --num-heads ({args.num_heads})"
        )
    if args.time_budget is not None and not 0 < args.time_budget <= MAX_MINUTES:
        parser.error(
            f"--time-budget must be a number of minutes > 0 and at most {MAX_MINUTES:,}; "
            f"got {args.time_budget}"
        )
    for name, ok, expected in (  # refused now, not after the training (NaN fails every test)
        ("lr", 0 < args.lr <= MAX_LR, f"a number > 0 and at most {MAX_LR:g}"),
        (
            "weight_decay",
            0 <= args.weight_decay and args.lr * args.weight_decay <= 1,
            "a number >= 0 with --lr x --weight-decay at most 1 "
            "(past it a step flips the weights' sign)",
        ),
        ("clip", 0 <= args.clip < math.inf, "a finite number >= 0 (0: no clipping)"),
        ("min_lr_ratio", 0 <= args.min_lr_ratio <= 1, "in [0, 1]"),
        ("dropout", 0 <= args.dropout < 1, "in [0, 1)"),
        (
            "temperature",
            0 <= args.temperature < math.inf,
            "a finite number >= 0 (0: the likeliest character)",
        ),
    ):
        if not ok:
            parser.error(
                f"--{name.replace('_', '-')} must be {expected}; got {getattr(args, name)}"
            )
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        parser.error(
            f"--out must be a folder (for the checkpoint, samples and pictures); {out} is a file"
        )
    return args


# -- data -----------------------------------------------------------------------------------


def prepare_data(args, progress=True):
    """(vocabulary, train ids, validation ids); ids as compact unsigned arrays."""
    train_text, validation_text = corpus.load_texts(args.data, progress=progress)
    if args.quick:  # a slice is plenty for 600 small steps, and encodes in a blink
        train_text, validation_text = train_text[:3_000_000], validation_text[:200_000]
    vocabulary = corpus.Vocabulary.from_text(train_text)
    dtype = (
        np.uint8
        if len(vocabulary) <= 1 << 8
        else np.uint16
        if len(vocabulary) <= 1 << 16
        else np.uint32
    )
    train_ids, validation_ids = (
        corpus.encode(vocabulary, text, dtype) for text in (train_text, validation_text)
    )
    for name, ids in (("training", train_ids), ("validation", validation_ids)):
        if len(ids) < args.context + 1:
            raise ValueError(
                f"the {name} text has {len(ids):,} characters; a context of {args.context} needs "
                f"at least {args.context + 1} (use a smaller --context, or more data)"
            )
    return vocabulary, train_ids, validation_ids


# -- checkpoints ----------------------------------------------------------------------------


def config_of(args, vocab_size):
    return dict(
        vocab_size=vocab_size,
        context=args.context,
        model_dim=args.model_dim,
        num_heads=args.num_heads,
        num_layers=args.num_layers,
        ff_dim=args.ff_dim,
        dropout=args.dropout,
        positions=args.positions,
    )


def save_checkpoint(path, model, vocabulary, optimizer, schedule, step, validation_loss):
    """Everything needed to sample or to resume, in one .npz written atomically by mg.save."""
    config = {
        key: (1 if value == "sinusoidal" else 0) if key == "positions" else value
        for key, value in model.config.items()
    }
    mg.save(
        {
            "model": model.state_dict(),
            "config": config,
            "vocabulary": vocabulary.code_points(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "step": step,
            "validation_loss": validation_loss,
        },
        path,
    )


def load_checkpoint(path):
    """(model, vocabulary, info) from a checkpoint of save_checkpoint; info has step and
    validation_loss. A file that is not one, or is damaged, raises ValueError (or OSError)
    naming it, before any model is built (check_checkpoint)."""
    config, state, vocabulary, info = check_checkpoint(path, mg.load(path))
    model = CharTransformer(**config)
    model.load_state_dict(state)
    return model, vocabulary, info


SETTING_LIMITS = {  # (smallest, largest) of each integer setting a checkpoint may hold
    "vocab_size": (1, 0x110000),  # at most every code point
    "context": (1, 1 << 16),  # sinusoidal positions make a (context, model_dim) table at once
    "model_dim": (1, 1 << 16),
    "num_heads": (1, 1 << 16),
    "num_layers": (1, 1 << 12),
    "ff_dim": (1, 1 << 18),
}


def check_checkpoint(path, checkpoint):
    """(config, state, vocabulary, info) of a loaded checkpoint (what mg.load gave), every part
    checked, or ValueError naming `path` and each problem: the keys save_checkpoint writes;
    each setting an integer in SETTING_LIMITS (dropout a number in [0, 1), positions 0 or 1);
    the vocabulary (corpus.Vocabulary.from_code_points) with vocab_size entries; exactly the
    arrays of model.state_shapes(config), each of floating-point numbers, of its shape, finite;
    step an integer >= 0 and validation_loss a finite number >= 0."""

    def refuse(problems):
        shown = problems[:6] + ([f"and {len(problems) - 6} more"] if len(problems) > 6 else [])
        raise ValueError(f"{path} is not a consistent checkpoint of train.py: " + "; ".join(shown))

    needed = [f"config.{key}" for key in CONFIG_KEYS] + ["vocabulary", "step", "validation_loss"]
    missing = (
        needed
        if not isinstance(checkpoint, Mapping)
        else [key for key in needed if key not in checkpoint]
    )
    if missing:
        raise ValueError(
            f"{path} is not a language-model checkpoint of train.py (missing {', '.join(missing)})"
        )
    config, problems = {}, []
    for key, (low, high) in SETTING_LIMITS.items():
        value = _integer(checkpoint[f"config.{key}"])
        if value is None or not low <= value <= high:
            problems.append(
                f"config.{key} is {_shown(checkpoint[f'config.{key}'])}; "
                f"expected an integer in [{low}, {high}]"
            )
        config[key] = value
    dropout = _number(checkpoint["config.dropout"])
    if dropout is None or not 0 <= dropout < 1:
        problems.append(
            f"config.dropout is {_shown(checkpoint['config.dropout'])}; expected a number in [0, 1)"
        )
    positions = _integer(checkpoint["config.positions"])
    if positions not in (0, 1):
        problems.append(
            f"config.positions is {_shown(checkpoint['config.positions'])}; "
            "expected 0 (learned) or 1 (sinusoidal)"
        )
    if not problems and config["model_dim"] % config["num_heads"]:
        problems.append(
            f"config.model_dim={config['model_dim']} is not divisible by "
            f"config.num_heads={config['num_heads']}"
        )
    if problems:  # the arrays cannot be checked against settings that do not hold
        refuse(problems)
    config.update(dropout=dropout, positions="sinusoidal" if positions else "learned")
    vocabulary = None
    try:
        vocabulary = corpus.Vocabulary.from_code_points(checkpoint["vocabulary"])
    except ValueError as error:
        problems.append(str(error))
    if vocabulary is not None and len(vocabulary) != config["vocab_size"]:
        problems.append(
            f"its vocabulary has {len(vocabulary)} entries for a vocab_size of "
            f"{config['vocab_size']}"
        )
    state = checkpoint.get("model")
    if not isinstance(state, Mapping):
        problems.append(f"its model entry is {_shown(state)}; expected the model's state dict")
        state = {}
    problems += _state_problems(state, state_shapes(**config))
    step, loss = _integer(checkpoint["step"]), _number(checkpoint["validation_loss"])
    if step is None or step < 0:
        problems.append(f"step is {_shown(checkpoint['step'])}; expected an integer >= 0")
    if loss is None or not 0 <= loss < math.inf:
        problems.append(
            f"validation_loss is {_shown(checkpoint['validation_loss'])}; "
            "expected a finite number >= 0"
        )
    if problems:
        refuse(problems)
    return config, dict(state), vocabulary, {"step": step, "validation_loss": loss}


def _state_problems(state, expected):
    """What is wrong with the model's state dict against the shapes it must have (a list)."""
    missing = [key for key in expected if key not in state]
    unexpected = [key for key in state if key not in expected]
    problems = []
    if missing:
        problems.append(f"missing keys {', '.join(missing[:4])}{' ...' * (len(missing) > 4)}")
    if unexpected:
        problems.append(
            "unexpected keys "
            f"{', '.join(map(str, unexpected[:4]))}{' ...' * (len(unexpected) > 4)} "
            "(not in a model of the checkpoint's config)"
        )
    for key, shape in expected.items():
        value = state.get(key)
        if key not in state:
            continue
        if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
            problems.append(
                f"model.{key} is {_shown(value)}; expected a floating-point numeric array"
            )
        elif value.shape != shape:
            problems.append(
                f"model.{key}: expected shape {shape} (from the config), got {value.shape}"
            )
        elif not np.isfinite(value).all():
            problems.append(f"model.{key} holds NaN or infinite values")
    return problems


def _integer(value):
    """value as an int when it is an integer (a Python or numpy int, or a 0-d integer array;
    not a bool, not a float even when whole), else None."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)


def _number(value):
    """value as a float when it is a real number (as _integer, floats too), else None."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return None
    if isinstance(value, (complex, np.complexfloating)):
        return None
    return float(value)


def _shown(value):
    """A short description of a checkpoint value for an error message."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0 and value.dtype.kind in "biuf":
            return f"{value.item()!r} ({value.dtype})"
        return f"an array of {value.dtype}, shape {value.shape}"
    text = repr(value)
    return f"{text[:40]}{'...' if len(text) > 40 else ''} ({type(value).__name__})"


# -- training -------------------------------------------------------------------------------


@mg.inference_mode()
def validation_loss(model, ids, args):
    """Mean loss in nats per character over the fixed validation batches (dropout off), under
    inference_mode: attention and LayerNorm keep nothing for a backward. The batches are
    windows of one length, so there is no padding to sort away."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for inputs, targets in corpus.evaluation_batches(
        ids, args.batch_size, args.context, args.eval_batches
    ):
        total += model.loss(inputs, targets).item() * targets.size
        count += targets.size
    model.train(was_training)
    return total / count


class Plan:
    """How many steps the run takes: --steps, or as many as fit in --time-budget (re-estimated
    from the measured pace at every evaluation, so the cosine decay ends with the budget).
    clock: seconds as a float (time.perf_counter; a test passes its own)."""

    def __init__(self, args, clock=time.perf_counter):
        self.steps, self.budget = (
            args.steps,
            None if args.time_budget is None else args.time_budget * 60,
        )
        self.warmup, self.min_ratio = args.warmup, args.min_lr_ratio
        self.clock = clock
        self.started = clock()

    def elapsed(self):
        return self.clock() - self.started

    def lr_factor(self, step):
        return mg.optim.lr_scheduler.warmup_cosine(
            min(self.warmup, self.steps), self.steps, self.min_ratio
        )(step)

    def replan(self, done, since_step, since_seconds):
        """Fit the rest of the budget at the pace measured since (step, elapsed seconds) `since`."""
        if self.budget is None or done <= since_step:
            return
        pace = (self.elapsed() - since_seconds) / (done - since_step)
        self.steps = max(done + 1, done + int((self.budget - self.elapsed()) / pace))

    def over(self, step):
        """True when the run is done: --steps reached, or (after at least one step) the budget."""
        return step >= self.steps or (
            self.budget is not None and step >= 1 and self.elapsed() >= self.budget
        )


def train(model, vocabulary, train_ids, validation_ids, args, out, progress=True):
    """Train in place; save the best checkpoint to out/best.npz. Returns the log (dict)."""
    optimizer = mg.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    plan = Plan(args)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, plan.lr_factor)
    batches = corpus.random_batches(train_ids, args.batch_size, args.context, seed=args.seed)
    log = {
        "steps": [],
        "train_loss": [],
        "validation": [],
        "best_validation_loss": math.inf,
        "best_step": None,
        "diverged_at": None,  # the step whose training loss was not finite, if one was
    }
    step, recent, step_seconds = 0, [], []
    pace_mark = (0, 0.0)
    bar = tqdm(total=plan.steps, desc="training", unit="step", disable=not progress)

    def evaluate():
        loss = validation_loss(model, validation_ids, args)
        log["validation"].append(
            {
                "step": step,
                "loss": loss,
                "bits_per_character": loss / LN2,
                "seconds": plan.elapsed(),
            }
        )
        if loss < log["best_validation_loss"]:
            log["best_validation_loss"], log["best_step"] = loss, step
            save_checkpoint(out / "best.npz", model, vocabulary, optimizer, schedule, step, loss)
        bar.write(
            f"step {step}: validation loss {loss:.4f} nats/char = {loss / LN2:.4f} "
            f"bits/char{' (best, saved)' if log['best_step'] == step else ''}"
        )

    while not plan.over(step):
        inputs, targets = next(batches)
        tick = time.perf_counter()
        optimizer.zero_grad()
        # loss = model.loss(inputs, targets); loss.backward(), with each core taking a part
        # of the batch
        loss = mg.parallel.forward_backward(model.loss, inputs, targets)
        if args.clip:
            mg.optim.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        schedule.step()
        step_seconds.append(time.perf_counter() - tick)
        step += 1
        recent.append(loss.item())
        log["steps"].append(step)
        log["train_loss"].append(recent[-1])
        bar.update()
        if not math.isfinite(recent[-1]):  # every step after it would be NaN too
            log["diverged_at"] = step
            break
        bar.set_postfix(loss=f"{np.mean(recent[-20:]):.3f}", lr=f"{optimizer.lr:.2e}")
        if step == 10:  # the first steps include compiling: pace from here on
            pace_mark = (step, plan.elapsed())
        if step % args.eval_every == 0 or plan.over(step):
            evaluate()
            plan.replan(step, *pace_mark)
            bar.total = plan.steps
    bar.close()
    log.update(
        total_steps=step,
        total_seconds=plan.elapsed(),
        seconds_per_step=float(np.median(step_seconds)) if step_seconds else 0.0,
    )
    return log


# -- after training -------------------------------------------------------------------------


def show_model(model, vocabulary, args, out, prompt):
    """Print samples and write out/attention.svg; returns (samples, svg path)."""
    samples = [
        generate(model, vocabulary, prompt, args.sample_length, args.temperature, args.top_k)
        for _ in range(args.samples)
    ]
    for index, sample in enumerate(samples):
        print(
            f"\n--- sample {index + 1} (temperature {args.temperature}, top-k {args.top_k}) ---\n"
            f"{sample}"
        )
    characters, maps = attention_maps(model, vocabulary, args.attention_prompt)
    path = out / "attention.svg"
    svg = attention_grid_svg(
        characters, maps, title=f'attention weights of every head, "{characters}"'
    )
    with mg.io.atomic_file(path) as file:
        file.write(svg.encode("utf-8"))
    print(f"\nattention of every head of every block: {path}")
    return samples, path


def text_problem(text):
    """What keeps `text` (a prompt) from being encoded, or None. Bytes of the command line that
    are not UTF-8 reach Python as surrogates (U+DC80..U+DCFF, "surrogateescape"); a lone
    surrogate is no character either."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        if 0xDC80 <= code <= 0xDCFF:
            return (
                f"its byte {error.start + 1} (0x{code - 0xDC00:02x}) is not UTF-8; "
                "pass the prompt as UTF-8 text"
            )
        return f"its character {error.start + 1} is a lone surrogate (U+{code:04X}), not text"
    return None


def memory_needed(config, batch_size):
    """About how many bytes training a CharTransformer of `config` on batches of `batch_size`
    takes: its weights with their gradients and AdamW's two moments (4 float32 copies), and a
    step's activations (per block the projections, the feed-forward layer and the (heads,
    context, context) attention weights; then the logits over the vocabulary)."""
    weights = sum(math.prod(shape) for shape in state_shapes(**config).values())
    tokens = batch_size * config["context"]
    per_block = (
        12 * config["model_dim"]
        + 3 * config["ff_dim"]
        + 2 * config["num_heads"] * config["context"]
    )
    activations = tokens * (config["num_layers"] * per_block + 3 * config["vocab_size"])
    return 4 * (4 * weights + activations)


def _writable(out):
    """Exit with a message unless `out` is (or can be made) a folder this process can write."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out).close()
    except OSError as error:
        sys.exit(f"train.py: cannot write to the --out folder {out}: {error.strerror or error}")


def main(argv=None):
    args = parse_args(argv)
    progress = not args.no_progress
    out = Path(args.out)
    if args.generate is None:
        earlier = [out / name for name in RUN_FILES if os.path.lexists(out / name)]
        if args.export_onnx and os.path.lexists(args.export_onnx):
            earlier.append(Path(args.export_onnx))
        if earlier and not args.overwrite:
            sys.exit(
                f"train.py: the --out folder {out} holds an earlier run's results "
                f"({', '.join(map(str, earlier))}); pass --overwrite to replace them, or give "
                "another --out"
            )
    else:  # a folder we cannot write to fails now, not after the sampling
        _writable(out)
    for flag, prompt in (
        ("--generate", args.generate),
        ("--attention-prompt", args.attention_prompt),
    ):
        problem = prompt is not None and text_problem(prompt)
        if problem:
            sys.exit(f"train.py: the {flag} prompt is not text the model can read: {problem}")
    mg.manual_seed(args.seed)
    if args.generate is not None:
        try:
            model, vocabulary, info = load_checkpoint(args.checkpoint)
        except (OSError, ValueError) as error:
            sys.exit(f"train.py: {error}")
        unknown = sorted(set(args.generate) - set(vocabulary.characters))
        if unknown:
            print(
                f"note: the model does not know {''.join(unknown)!r}; "
                "they are read as its unknown character",
                file=sys.stderr,
            )
        print(
            f"checkpoint {args.checkpoint}: step {info['step']}, "
            f"validation loss {info['validation_loss']:.4f} nats/char "
            f"({info['validation_loss'] / LN2:.4f} bits/char)"
        )
        try:
            return show_model(model, vocabulary, args, out, args.generate)
        except NonFiniteLogits as error:  # finite weights can still overflow
            sys.exit(f"train.py: {args.checkpoint}: {error}")
    if args.quick:
        print(
            f"QUICK DEMO: a {args.num_layers}-block model of {args.model_dim} features, "
            f"{args.steps} steps on at most 3 million characters of the reviews; "
            "drop --quick for the real run."
        )
    started = time.perf_counter()
    try:
        vocabulary, train_ids, validation_ids = prepare_data(args, progress)
    except (DataNotFoundError, FileNotFoundError, ValueError) as error:
        sys.exit(f"train.py: {error}")
    config = config_of(args, len(vocabulary))
    needed, available = memory_needed(config, args.batch_size), mg.io._available_memory()
    if available is not None and needed > available:
        sys.exit(
            f"train.py: a model of these settings and batches of {args.batch_size} "
            f"contexts of {args.context} characters need about {needed / 2**30:,.1f} GiB; "
            f"this process can take {available / 2**30:,.1f} GiB. "
            "Use a smaller --batch-size, --context, --model-dim, --num-layers or --ff-dim"
        )
    _writable(out)  # a folder we cannot write to fails now, not at the first checkpoint
    model = CharTransformer(**config)
    print(
        f"data: {len(train_ids):,} training and {len(validation_ids):,} validation characters, "
        f"{len(vocabulary)} distinct ({time.perf_counter() - started:.1f} s); model: "
        f"{parameter_count(model):,} parameters"
    )
    log = train(model, vocabulary, train_ids, validation_ids, args, out, progress)
    best = log["best_validation_loss"]
    diverged = (
        ""
        if log["diverged_at"] is None
        else f"the training loss became {log['train_loss'][-1]} at step {log['diverged_at']}: "
        "the run diverged, and stopped there; "
    )
    if log["best_step"] is None:  # never finite: nothing saved, the files in --out as they were
        last = log["validation"][-1]["loss"] if log["validation"] else "not measured"
        sys.exit(
            f"train.py: {diverged}the validation loss was never finite (last: {last}), so no "
            f"checkpoint was saved and {out} is as it was; try a smaller --lr, or --clip 1"
        )
    print(
        f"\nbest validation loss {best:.4f} nats/char = {best / LN2:.4f} bits/char at step "
        f"{log['best_step']}; {log['total_steps']} steps in {log['total_seconds']:.0f} s "
        f"({log['seconds_per_step']:.3f} s/step); checkpoint {out / 'best.npz'}"
    )
    model, vocabulary, _ = load_checkpoint(out / "best.npz")
    if args.export_onnx:
        ids = mg.tensor(np.zeros((1, min(8, model.context)), np.int64))
        mg.onnx.export(
            model,
            (ids,),
            args.export_onnx,
            input_names=["ids"],
            output_names=["logits"],
            dynamic_axes={"ids": {0: "batch", 1: "time"}, "logits": {0: "batch", 1: "time"}},
        )
        print(f"ONNX model: {args.export_onnx}")
    samples, svg = show_model(model, vocabulary, args, out, "This movie")
    log.update(
        samples=samples,
        attention_svg=str(svg),
        config=model.config,
        parameters=parameter_count(model),
    )
    with mg.io.atomic_file(out / "log.json") as file:
        file.write(json.dumps(log, indent=1).encode("utf-8"))
    if diverged:  # its best checkpoint is a result, but the run did not end as asked
        sys.exit(
            f"train.py: {diverged}{out / 'best.npz'} holds its best, from step {log['best_step']}; "
            "try a smaller --lr, or --clip 1"
        )
    return log


if __name__ == "__main__":
    # The script's choice for its whole process (importing minigrad leaves malloc alone): glibc
    # keeps freed arrays for the next steps instead of fresh pages (docs/API.md, "Environment").
    mg.kernels.tune_malloc()
    main()
