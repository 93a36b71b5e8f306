"""A word-level RNN language model trained the way pytorch/examples' word_language_model trains
one, one source run with `torch` and with minigrad in its place.

The program: a Dictionary built from a corpus with '<eos>' after each line, the token stream
batchified into columns, bptt-long slices, an RNNModel (Embedding, LSTM / GRU / RNN_TANH with
the state passed positionally, `output, hidden = self.rnn(emb, hidden)`, a decoder whose weight
is the encoder's), the hidden state carried from batch to batch and cut from the graph by
repackage_hidden, NLLLoss over log_softmax, clip_grad_norm_, plain SGD, evaluation under no_grad,
and the rate divided by 4 when the validation loss stops improving. From the same weights, in
float64, the two frameworks give the same losses, the same gradient norms and the same weights.

word_language_model updates with `p.data.add_(p.grad, alpha=-lr)`: `.data` is a tensor that
shares the parameter's memory, in both. Under torch the same program with torch.optim.SGD's step
in its place must give the same numbers (that it is the update the program means).
"""

import numpy as np
import pytest
from parity import assert_close, copy_state_to_torch

import minigrad as mg

torch = pytest.importorskip("torch")

CORPUS = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a cat saw a dog",
    "the dog saw the cat on the mat",
    "a dog sat on a log and the cat sat on a mat",
]
VALID = ["the cat saw the dog", "a dog sat on the mat"]


def language_model(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Dictionary:
        def __init__(self):
            self.word2idx, self.idx2word = {}, []

        def add_word(self, word):
            if word not in self.word2idx:
                self.idx2word.append(word)
                self.word2idx[word] = len(self.idx2word) - 1
            return self.word2idx[word]

        def tokenize(self, lines):
            ids = [self.add_word(word) for line in lines for word in line.split() + ["<eos>"]]
            return torch.tensor(ids, dtype=torch.int64)

    class RNNModel(nn.Module):
        """Encoder, recurrent module and decoder; the decoder shares the encoder's weight."""

        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ["LSTM", "GRU"]:
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

        def init_weights(self):
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output).view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == "LSTM":
                return (
                    weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid),
                )
            return weight.new_zeros(self.nlayers, bsz, self.nhid)

    return Dictionary, RNNModel


def program(torch, rnn_type, initial_state, update, epochs=4, lr=2.0, bptt=4, clip=0.5):
    """word_language_model's main loop -> (train losses, gradient norms, val losses, model).
    update: 'data' for `p.data.add_(p.grad, alpha=-lr)`, 'optimizer' for torch.optim.SGD."""
    Dictionary, RNNModel = language_model(torch)
    corpus = Dictionary()
    train_ids, val_ids = corpus.tokenize(CORPUS), corpus.tokenize(VALID)

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data[: nbatch * bsz]
        return data.view(bsz, -1).t().contiguous()

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].view(-1)

    def repackage_hidden(h):
        """Wraps hidden states in new Tensors, to detach them from their history."""
        if isinstance(h, torch.Tensor):
            return h.detach()
        return tuple(repackage_hidden(v) for v in h)

    train_data, val_data = batchify(train_ids, 3), batchify(val_ids, 2)
    model = RNNModel(rnn_type, len(corpus.idx2word), 8, 8, 2).double()
    model.load_state_dict({name: torch.tensor(value) for name, value in initial_state.items()})
    criterion = torch.nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr) if update == "optimizer" else None

    def evaluate(data_source):
        model.eval()
        total_loss, hidden = 0.0, model.init_hidden(2)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    losses, norms, val_losses, best_val_loss = [], [], [], None
    for _ in range(epochs):
        model.train()
        hidden = model.init_hidden(3)
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            hidden = repackage_hidden(hidden)  # else backward would run into the last batch
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), clip).item())
            if optimizer is None:
                for p in model.parameters():
                    p.data.add_(p.grad, alpha=-lr)
            else:
                optimizer.step()
            losses.append(loss.item())
        val_losses.append(evaluate(val_data))
        if not best_val_loss or val_losses[-1] < best_val_loss:
            best_val_loss = val_losses[-1]
        else:
            lr /= 4.0  # anneal when validation stops improving
            for group in [] if optimizer is None else optimizer.param_groups:
                group["lr"] = lr
    return losses, norms, val_losses, model


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "RNN_TANH"])
def test_the_same_rnn_language_model_trains_alike(rnn_type):
    _, RNNModel = language_model(mg)
    ntoken = len({word for line in CORPUS + VALID for word in line.split()}) + 1  # and '<eos>'
    mg.manual_seed(0)
    ours = RNNModel(rnn_type, ntoken, 8, 8, 2).double()
    initial = {name: value.numpy() for name, value in ours.state_dict().items()}
    theirs = copy_state_to_torch(
        ours, language_model(torch)[1](rnn_type, ntoken, 8, 8, 2), np.float64
    )
    assert theirs.decoder.weight is theirs.encoder.weight and "decoder.weight" in initial

    our_losses, our_norms, our_val, our_model = program(mg, rnn_type, initial, "data")
    their_losses, their_norms, their_val, their_model = program(torch, rnn_type, initial, "data")
    assert len(their_losses) == 16  # 14 rows: 4 batches of bptt 4 (the last of 1), 4 epochs
    assert_close(np.array(our_losses), np.array(their_losses), 1e-9, "losses")
    assert_close(np.array(our_norms), np.array(their_norms), 1e-9, "gradient norms")
    assert_close(np.array(our_val), np.array(their_val), 1e-9, "validation losses")
    assert max(their_norms) > 0.5  # clipping took effect
    epoch_means = np.array(their_losses).reshape(4, 4).mean(axis=1)
    assert epoch_means[-1] < epoch_means[0] - 0.1  # it learned something
    their_state = their_model.state_dict()
    for name, value in our_model.state_dict().items():
        assert_close(value, their_state[name], 1e-9, name)

    # under torch, the optimizer's step is the `.data` update this program stands in for
    with_optimizer = program(torch, rnn_type, initial, "optimizer")
    np.testing.assert_array_equal(with_optimizer[0], their_losses)
    np.testing.assert_array_equal(with_optimizer[2], their_val)
