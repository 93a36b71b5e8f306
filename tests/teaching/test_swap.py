"""minigrad.teaching.swap: a student's softmax or attention runs in minigrad's place for a
`with` block: the hand example, examples/four_matrices.py and the sentiment model give
minigrad's own numbers on a right one (which did run: its calls are counted), and a wrong one
is named at its first wrong number. Nothing of the swap outlives its block, reaches another
thread, or a later test."""

import contextlib
import io
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.engine import hooks
from minigrad.teaching import ExerciseError, swap


class StableSoftmax(mg.Function):
    @staticmethod
    def forward(ctx, z):
        exps = np.exp(z - z.max(axis=-1, keepdims=True))
        s = exps / exps.sum(axis=-1, keepdims=True)
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved
        return s * (grad - (s * grad).sum(axis=-1, keepdims=True))


class WithoutTheSumTerm(StableSoftmax):
    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved
        return s * grad  # the - s * sum(s * g) term left out


class Overflowing(StableSoftmax):
    @staticmethod
    def forward(ctx, z):
        exps = np.exp(z)
        s = exps / exps.sum(axis=-1, keepdims=True)
        ctx.save_for_backward(s)
        return s


class Attention(mg.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale, mask):
        scores = q @ np.swapaxes(k, -1, -2) * scale
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = exps / exps.sum(axis=-1, keepdims=True)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return weights @ v, weights

    @staticmethod
    def backward(ctx, grad_out, grad_weights):
        q, k, v, weights = ctx.saved
        grad_w = grad_out @ np.swapaxes(v, -1, -2)
        grad_scores = weights * (grad_w - (weights * grad_w).sum(axis=-1, keepdims=True))
        grad_scores = grad_scores * ctx.scale
        return (
            grad_scores @ k,
            np.swapaxes(grad_scores, -1, -2) @ q,
            np.swapaxes(weights, -1, -2) @ grad_out,
        )


class AttentionUnscaledBackward(Attention):
    @staticmethod
    def backward(ctx, grad_out, grad_weights):
        ctx.scale = 1.0  # the scale forgotten on the way back
        return Attention.backward(ctx, grad_out, grad_weights)


@pytest.fixture(autouse=True)
def no_swap_before_or_after():
    assert hooks.active() == ()
    yield
    assert hooks.active() == ()


def self_attention_run(**options):
    mg.manual_seed(3)
    layer = nn.SelfAttention(8, num_heads=2, **options)
    x = mg.randn(3, 5, 8, requires_grad=True)
    out = layer(x, lengths=mg.tensor([5, 3, 0]))
    (out * mg.randn(3, 5, 8)).sum().backward()
    return [out.numpy(), x.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()]


def assert_all_close(left, right):
    assert len(left) == len(right)
    for a, b in zip(left, right):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_softmax_masked_softmax_and_attention_run_on_the_students_softmax():
    z = mg.randn(3, 4, 5, requires_grad=True)
    mask = mg.tensor(np.random.default_rng(0).random((3, 4, 5)) > 0.3)

    def softmaxes():
        z.grad = None
        outs = [mg.softmax(z, 1), mg.masked_softmax(z, mask, scale=0.5, causal=True)]
        outs.append(mg.masked_softmax(z, key_lengths=mg.tensor([[5], [2], [0]]), empty_rows="zero"))
        sum(((o * o).sum() for o in outs), mg.tensor(0.0)).backward()
        return [o.numpy() for o in outs] + [z.grad.numpy()]

    own = softmaxes() + self_attention_run() + self_attention_run(causal=True, fused=False)
    with swap(softmax=StableSoftmax) as swapped:
        yours = softmaxes() + self_attention_run() + self_attention_run(causal=True, fused=False)
    assert_all_close(yours, own)
    assert swapped.calls == {"StableSoftmax": 4, "attention on StableSoftmax": 1}


def test_the_hand_example_and_four_matrices_run_on_the_students_softmax(monkeypatch):
    from examples import attention_by_hand, four_matrices

    def runs():
        with contextlib.redirect_stdout(io.StringIO()):
            tables = attention_by_hand.main()
        model = four_matrices.untrained_model()
        rng = np.random.default_rng(0)
        ids, labels = four_matrices.make_sentences(16, rng)
        history = four_matrices.train(model, four_matrices.word_vectors(), ids, labels)
        losses = [entry["loss"] for entry in history]
        return [np.asarray(v, dtype=float) for v in _arrays(tables)] + [np.array(losses)]

    monkeypatch.setattr(four_matrices, "STEPS", 6)
    monkeypatch.setattr(four_matrices, "REPORT_EVERY", 2)
    own = runs()
    with swap(softmax=StableSoftmax) as swapped:
        yours = runs()
    assert_all_close(yours, own)
    assert swapped.calls["StableSoftmax"] >= 14 and swapped.calls["attention on StableSoftmax"] >= 5
    assert len(own[-1]) == 4 and own[-1][-1] < own[-1][0]  # the loss fell


def _arrays(value):
    if isinstance(value, dict):
        return [a for key in sorted(value) for a in _arrays(value[key])]
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in _arrays(item)]
    return [value] if isinstance(value, (np.ndarray, float, int)) else []


@pytest.mark.parametrize("pool", ["dot", "mhsa"])
def test_a_short_run_of_the_sentiment_model_on_the_students_op(pool):
    from examples.sentiment.model import SentimentModel

    def run():
        mg.manual_seed(0)
        model = SentimentModel(30, pool=pool, embedding_dim=8, hidden_size=8, num_heads=2)
        optimizer = mg.optim.Adam(model.parameters(), lr=0.01)
        rng = np.random.default_rng(0)
        lengths = np.array([7, 3, 5, 1])
        ids = rng.integers(1, 30, size=(4, 7)) * (np.arange(7) < lengths[:, None])
        labels = mg.tensor([1, 0, 1, 0])
        losses = []
        for _ in range(3):
            loss = mg.cross_entropy(model(mg.tensor(ids), lengths, need_weights=False), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return [np.array(losses)] + [p.numpy() for p in model.parameters()]

    own = run()
    students = [{"softmax": StableSoftmax}] + [{"attention": Attention}] * (pool == "mhsa")
    for student in students:
        with swap(**student) as swapped:
            yours = run()
        assert_all_close(yours, own)
        assert sum(swapped.calls.values()) >= 3


def test_the_students_attention_replaces_scaled_dot_product_attention():
    own = self_attention_run() + self_attention_run(causal=True)
    q, k, v = (mg.randn(2, 4, 3, requires_grad=True) for _ in range(3))
    own_sdpa = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7)
    with swap(attention=Attention) as swapped:
        yours = self_attention_run() + self_attention_run(causal=True)
        sdpa = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7)
    assert_all_close(yours + [sdpa.numpy()], own + [own_sdpa.numpy()])
    assert swapped.calls == {"Attention": 3}


def test_a_wrong_softmax_backward_is_named_at_its_first_wrong_number():
    with pytest.raises(ExerciseError) as caught, swap(softmax=WithoutTheSumTerm):
        self_attention_run(fused=False)
    message = str(caught.value)
    assert message.startswith("your WithoutTheSumTerm, call 1: the gradient of the softmax's")
    assert "is wrong at index (0, 0, 0, 0): yours is" in message
    assert "minigrad's own gives" in message
    with pytest.raises(ExerciseError, match="your attention on WithoutTheSumTerm, call 1: the gr"):
        with swap(softmax=WithoutTheSumTerm):
            self_attention_run()


def test_an_overflowing_softmax_is_named_in_forward():
    scores = mg.tensor([[1.0, 800.0, 2.0]])
    with np.errstate(all="ignore"), pytest.raises(ExerciseError) as caught:
        with swap(softmax=Overflowing):
            mg.softmax(scores, -1)
    message = str(caught.value)
    assert "your Overflowing, call 1: the softmax of an input of shape (1, 3) is wrong" in message
    assert "yours is nan: an overflow" in message


def test_a_wrong_attention_backward_is_named_and_check_false_runs_it_alone():
    with pytest.raises(
        ExerciseError,
        match=r"Backward, call 1: the gradient of the query \(shape \(3, 2, 5, 4\)\) is wrong",
    ):
        with swap(attention=AttentionUnscaledBackward):
            self_attention_run()
    own = self_attention_run()
    with swap(attention=AttentionUnscaledBackward, check=False):
        yours = self_attention_run()
    assert np.allclose(yours[0], own[0], atol=1e-5)  # forward is right
    assert not np.allclose(yours[1], own[1], atol=1e-3)  # its gradients are its own


def test_the_students_blank_is_told_not_written_yet():
    class Blank(StableSoftmax):
        @staticmethod
        def forward(ctx, z):
            raise NotImplementedError()

    with pytest.raises(ExerciseError, match="your Blank.forward \\(call 1\\) is not written yet"):
        with swap(softmax=Blank):
            mg.softmax(mg.randn(2, 3), -1)


def test_nothing_leaks_past_the_block_or_into_another_thread():
    z = mg.randn(2, 3)
    with pytest.raises(ExerciseError), swap(softmax=WithoutTheSumTerm):
        mg.softmax(z, -1).sum()  # forward alone is right
        raise ExerciseError("an error inside the block")
    assert hooks.active() == ()
    seen = []
    with swap(softmax=StableSoftmax) as swapped:
        thread = threading.Thread(target=lambda: seen.append(mg.softmax(z, -1).grad_fn))
        thread.start()
        thread.join()
        mine = mg.softmax(mg.randn(2, 3, requires_grad=True), -1).grad_fn
    assert swapped.calls == {"StableSoftmax": 1}  # the other thread ran minigrad's own
    assert type(mine).__name__ == "StableSoftmax"
    after = mg.softmax(mg.randn(2, 3, requires_grad=True), -1).grad_fn
    assert type(after).__module__ == "minigrad.ops.softmax" and swapped.calls["StableSoftmax"] == 1


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="give softmax=YourSoftmax, attention=YourAttention"):
        with swap():
            pass
    with pytest.raises(TypeError, match="softmax must be a class with static forward"):
        with swap(softmax=np.exp):
            pass
    with pytest.raises(TypeError, match="has no backward"):
        with swap(softmax=type("OnlyForward", (), {"forward": staticmethod(lambda ctx, z: z)})):
            pass
