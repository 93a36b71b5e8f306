"""A GPT written the way PyTorch users write one (the layout of Karpathy's nanoGPT: a fused
c_attn projection split in three, view/transpose into heads, a tril buffer with masked_fill,
tied embedding and output weights, GELU(approximate="tanh"), LayerNorm without bias, AdamW
with two parameter groups, the rate set through param_groups, clip_grad_norm_, top-k
sampling under no_grad). The model source below is written once and run twice: with
`torch` and with minigrad in its place. Started from the same weights, the two must give the
same losses step by step and the same weights after training."""

import math

import numpy as np
import pytest

import minigrad as mg


def gpt_classes(torch, F):
    """The model, written against whichever framework is passed as `torch`."""
    nn = torch.nn

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd, n_head, block_size):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.n_head, self.n_embd = n_head, n_embd
            self.register_buffer(
                "bias",
                torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size),
            )

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self, n_embd, n_head, block_size):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd, bias=False)
            self.attn = CausalSelfAttention(n_embd, n_head, block_size)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(
                nn.Linear(n_embd, 4 * n_embd),
                nn.GELU(approximate="tanh"),
                nn.Linear(4 * n_embd, n_embd),
            )

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, vocab_size, block_size=12, n_embd=32, n_head=4, n_layer=2):
            super().__init__()
            self.block_size = block_size
            self.transformer = nn.ModuleDict(
                dict(
                    wte=nn.Embedding(vocab_size, n_embd),
                    wpe=nn.Embedding(block_size, n_embd),
                    h=nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)]),
                    ln_f=nn.LayerNorm(n_embd),
                )
            )
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                torch.nn.init.zeros_(module.bias)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(
                    logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1
                )
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas):
            params = {name: p for name, p in self.named_parameters() if p.requires_grad}
            groups = [
                {
                    "params": [p for p in params.values() if p.dim() >= 2],
                    "weight_decay": weight_decay,
                },
                {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0},
            ]
            return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size :]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    return GPT


def _train(torch, model, x, y, steps=8):
    optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=3e-3, betas=(0.9, 0.95))
    losses = []
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = 3e-3 * min(1.0, (step + 1) / 4)  # warm-up, set by hand as nanoGPT does
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_the_same_gpt_source_trains_alike_under_minigrad_and_torch():
    torch = pytest.importorskip("torch")
    import minigrad.nn.functional as mg_functional
    import torch.nn.functional as torch_functional

    mg.manual_seed(0)
    ours = gpt_classes(mg, mg_functional)(vocab_size=20)
    theirs = gpt_classes(torch, torch_functional)(vocab_size=20)
    state = ours.state_dict()
    # same names, the tril buffer and both tied names included
    assert set(state) == set(theirs.state_dict())
    theirs.load_state_dict(
        {name: torch.from_numpy(value.numpy().copy()) for name, value in state.items()}
    )
    assert theirs.lm_head.weight is theirs.transformer.wte.weight

    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 20, (4, 12)), rng.integers(0, 20, (4, 12))
    our_losses = _train(mg, ours, mg.tensor(x), mg.tensor(y))
    their_losses = _train(torch, theirs, torch.from_numpy(x), torch.from_numpy(y))
    np.testing.assert_allclose(our_losses, their_losses, rtol=2e-5)
    assert their_losses[-1] < their_losses[0] - 0.05  # it learned something, in both
    trained = theirs.state_dict()
    for name, value in ours.state_dict().items():
        np.testing.assert_allclose(
            value.numpy(), trained[name].numpy(), rtol=1e-4, atol=2e-5, err_msg=name
        )

    # greedy continuation (top_k=1 leaves one token to sample) is the same token for token
    ours.eval()
    theirs.eval()
    start = np.array([[3, 1]])
    np.testing.assert_array_equal(
        ours.generate(mg.tensor(start), 6, top_k=1).numpy(),
        theirs.generate(torch.from_numpy(start), 6, top_k=1).numpy(),
    )
