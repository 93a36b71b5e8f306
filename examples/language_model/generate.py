"""Text from a trained character model: sampling with temperature and top-k, with or without
a key/value cache.

Without a cache every new character runs the model over the whole text so far (up to the
context): T positions of work for one prediction. With a cache (one nn.KVCache per block)
each block keeps the keys and values of the positions it has seen, so a new character costs
one position of work; the logits are the same (tests/examples/test_language_model.py checks it).
"""

import numpy as np

import minigrad as mg


class NonFiniteLogits(ValueError):
    """The model gave NaN or infinite logits: there is no distribution to sample from."""


def next_id(logits, temperature=1.0, top_k=None):
    """Draw one id from the last axis of logits (vocab,): softmax(logits / temperature) over the
    top_k largest (all when None). temperature 0 takes the most likely id, as does a temperature
    so small that logits / temperature overflow (its limit). Seeded by mg.manual_seed. Logits
    that are not all finite raise NonFiniteLogits."""
    logits = logits if isinstance(logits, mg.Tensor) else mg.tensor(np.asarray(logits))
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0; got {temperature}")
    if not np.isfinite(logits.numpy()).all():
        raise NonFiniteLogits(
            "the model's logits are not finite (NaN or infinite), so no character can be drawn; "
            "its weights are damaged or overflow"
        )
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        overflows = temperature == 0 or not np.isfinite(logits.numpy() / temperature).all()
    if overflows:
        return int(logits.argmax().item())
    if top_k is not None and top_k < logits.shape[-1]:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1; got {top_k}")
        values, ids = mg.topk(logits, top_k)
    else:
        values, ids = logits, mg.arange(logits.shape[-1])
    probabilities = mg.softmax(values / temperature, dim=-1)
    return int(ids[mg.multinomial(probabilities, 1)[0]].item())


@mg.no_grad()
def generate(model, vocabulary, prompt, length, temperature=0.8, top_k=20, use_cache=True):
    """prompt followed by `length` sampled characters (a str). The model sees at most its
    context; with use_cache, when the cache is full it restarts from the last half context."""
    was_training = model.training
    model.eval()
    ids = list(vocabulary.encode(prompt)) or list(vocabulary.encode("\n"))
    context, caches = model.context, None
    for _ in range(length):
        if not use_cache:
            logits = model(np.array([ids[-context:]]))
        elif caches is None or len(caches[0]) == context:  # the start, or a full cache
            window = ids[-context:] if caches is None else ids[-max(1, context // 2) :]
            caches = model.new_caches()
            logits = model(np.array([window]), caches)
        else:
            logits = model(np.array([ids[-1:]]), caches)  # only the newest character
        ids.append(next_id(logits[0, -1], temperature, top_k))
    model.train(was_training)
    return vocabulary.decode(ids)


@mg.no_grad()
def tokens_per_second(model, vocabulary, prompt, length, use_cache):
    """(seconds, characters per second) for generating `length` characters after `prompt`."""
    import time

    started = time.perf_counter()
    generate(model, vocabulary, prompt, length, temperature=1.0, top_k=None, use_cache=use_cache)
    seconds = time.perf_counter() - started
    return seconds, length / seconds
