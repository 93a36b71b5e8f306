"""GRU (Cho et al., 2014), the LSTM's lighter cousin, and the plain RNN, written with engine ops.

One GRU step, gate order r, z, n as in PyTorch:

    r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)        reset gate: how much of h the candidate sees
    z = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)        update gate: how much of h to keep
    n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))      candidate state
    h' = (1 - z) * n + z * h

The three W_i* are stacked into weight_ih (3H, I), the three W_h* into weight_hh (3H, H).
Unlike nn.LSTM (one fused node per layer), GRU runs step by step with ordinary ops, so its
graph is the textbook one; the input projections of all steps are one product per layer.
"""

import minigrad as mg
from minigrad.errors import ArgumentError

from .linear import linear
from .lstm import (
    LSTM,
    LSTMCell,
    _between_layers,
    _cell_inputs,
    _cell_parameters,
    _checked_input,
    _checked_states,
    _packed_call,
    _recurrent_parameters,
    _unbatched_call,
    flatten_parameters,
)
from .module import Module
from .utils import rnn


def gru_cell(x, h, weight_ih, weight_hh, bias_ih=None, bias_hh=None):
    """One GRU step from engine ops: x (B, I), h (B, H) -> h' (B, H)."""
    return _gru_step(linear(x, weight_ih, bias_ih), h, weight_hh, bias_hh)


def _gru_step(inputs, h, weight_hh, bias_hh):
    """h' from the step's input projection x W_ih^T + b_ih (B, 3H) and h."""
    size = h.shape[-1]
    hidden = linear(h, weight_hh, bias_hh)
    r = (inputs[:, :size] + hidden[:, :size]).sigmoid()
    z = (inputs[:, size : 2 * size] + hidden[:, size : 2 * size]).sigmoid()
    n = (inputs[:, 2 * size :] + r * hidden[:, 2 * size :]).tanh()
    return n + z * (h - n)  # (1 - z) n + z h


class GRUCell(Module):
    """One GRU step: forward(x (B, I) or (I,), h (B, H) or (H,), optional) -> h' of h's shape.

    Parameters as torch.nn.GRUCell: weight_ih (3H, I), weight_hh (3H, H), bias_ih, bias_hh (3H,),
    all U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, input_size, hidden_size, bias=True, dtype=None):
        super().__init__()
        _cell_parameters(self, 3, input_size, hidden_size, bias, dtype)

    def forward(self, x, h=None):
        x, (h,), unbatched = _cell_inputs(self, x, None if h is None else (h,), ("h",))
        h = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h.squeeze(0) if unbatched else h

    extra_repr = LSTMCell.extra_repr


def _checked_nonlinearity(module, nonlinearity):
    if nonlinearity not in ("tanh", "relu"):
        raise ArgumentError(
            f"{type(module).__name__}: nonlinearity must be 'tanh' or 'relu'; got {nonlinearity!r}"
        )
    return nonlinearity


class RNNCell(Module):
    """One step of the plain RNN: forward(x (B, I) or (I,), h (B, H) or (H,), optional) -> h' of h's shape,

        h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)      (nonlinearity="relu": relu instead)

    RNNCell(input_size, hidden_size, bias=True, nonlinearity="tanh", dtype=None) (torch's order);
    parameters as torch.nn.RNNCell: weight_ih (H, I), weight_hh (H, H), bias_ih, bias_hh (H,), all
    U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", dtype=None):
        super().__init__()
        self.nonlinearity = _checked_nonlinearity(self, nonlinearity)
        _cell_parameters(self, 1, input_size, hidden_size, bias, dtype)

    def forward(self, x, h=None):
        x, (h,), unbatched = _cell_inputs(self, x, None if h is None else (h,), ("h",))
        h = self._step(linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h

    def _step(self, inputs, h, weight_hh, bias_hh):
        """h' from the step's input projection x W_ih^T + b_ih (B, H) and h."""
        total = inputs + linear(h, weight_hh, bias_hh)
        return total.tanh() if self.nonlinearity == "tanh" else total.relu()

    def extra_repr(self):  # torch's: nonlinearity only when not tanh, unquoted
        base = LSTMCell.extra_repr(self)
        return base if self.nonlinearity == "tanh" else f"{base}, nonlinearity={self.nonlinearity}"


class _StepByStep(Module):
    """What GRU and RNN share: torch's parameters, padded batches with lengths or packed input,
    an initial state, and a loop over the steps of each direction of each layer that calls
    `_step(input projection at t, h, weight_hh, bias_hh)`."""

    gates = None  # rows of weight_ih per hidden unit (GRU 3, RNN 1)

    def __init__(
        self, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype
    ):
        super().__init__()
        _recurrent_parameters(
            self,
            self.gates,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            bidirectional,
            dtype,
            dropout,
        )

    flatten_parameters = flatten_parameters

    _state_names = ("hx",)
    _suffixes = LSTM._suffixes
    _directions = LSTM._directions
    extra_repr = LSTM.extra_repr

    def forward(self, x, lengths=None, hx=None):
        name = type(self).__name__
        if isinstance(x, rnn.PackedSequence):
            return _packed_call(self, x, lengths, hx)
        if isinstance(lengths, mg.Tensor) and lengths.ndim in (
            2,
            3,
        ):  # lengths are 1-D, states 2-D or 3-D
            raise TypeError(
                f"{name}.forward(x, lengths=None, hx=None): the second argument is lengths; "
                f"pass the initial state by name: {name.lower()}(x, hx=h0)"
            )
        x = _checked_input(self, x)
        if x.ndim == 2:
            return _unbatched_call(self, x, lengths, hx)
        [hx] = _checked_states(self, x, hx)
        dtype = x.dtype
        x = x.transpose(0, 1) if self.batch_first else x  # (T, B, I) from here on
        steps, batch = x.shape[0], x.shape[1]
        lengths = LSTM._check_lengths(lengths, batch, steps, name)
        # real[t]: (B, 1) 1.0 where step t is inside sequence b, else 0.0
        real = [mg.tensor((t < lengths).astype(dtype)[:, None]) for t in range(steps)]
        h_n = []
        for layer in range(self.num_layers):
            outputs = []
            for direction, (weight_ih, weight_hh, bias_ih, bias_hh) in enumerate(
                self._directions(layer)
            ):
                inputs = linear(x, weight_ih, bias_ih)  # every step's input projection at once
                h = hx[layer * self.num_directions + direction]
                order = range(steps - 1, -1, -1) if direction else range(steps)
                out = [None] * steps
                for t in (
                    order
                ):  # past a sequence's end h stays as it was (reverse: until its last step)
                    new = self._step(inputs[t], h, weight_hh, bias_hh)
                    h = h + real[t] * (new - h)
                    out[t] = new * real[t]
                h_n.append(h)
                outputs.append(mg.stack(out))
            x = _between_layers(
                self, outputs[0] if len(outputs) == 1 else mg.cat(outputs, dim=2), layer
            )
        output = x.transpose(0, 1) if self.batch_first else x
        return output, mg.stack(h_n)


class GRU(_StepByStep):
    """Multi-layer (bidirectional) GRU over padded batches, with PyTorch's parameters and results.

    GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, dtype=None) (torch's order; dropout as LSTM's). Parameters per layer k: weight_ih_l{k} (3H, I_k),
    weight_hh_l{k} (3H, H), bias_ih_l{k}, bias_hh_l{k} (3H,), and the same with suffix _reverse;
    U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch, so state dicts move both ways.

    forward(x, lengths=None, hx=None) -> (output, h_n), as nn.LSTM's without the cell state:
        x        (B, T, input_size) if batch_first else (T, B, input_size)
        lengths  optional (B,) ints in [1, T] for a right-padded batch (what PyTorch computes
                 with pack_padded_sequence): outputs at padded positions are 0, and h_n is
                 each direction's state after its last real step.
        hx       optional h0 (num_layers * num_directions, B, H); zeros if None.
        x may also be one unbatched sequence (T, input_size), as in torch (batch_first does
        not apply): hx, output and h_n then have no batch axis.
    """

    gates = 3

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        dtype=None,
    ):
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype
        )

    @staticmethod
    def _step(inputs, h, weight_hh, bias_hh):
        return _gru_step(inputs, h, weight_hh, bias_hh)


class RNN(_StepByStep):
    """The plain (Elman) recurrent network, as torch.nn.RNN:

        h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)      (nonlinearity="relu": relu instead)

    RNN(input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, dtype=None) (torch's order); parameters weight_ih_l{k} (H, I_k),
    weight_hh_l{k} (H, H), biases (H,); forward as GRU's."""

    gates = 1

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        dtype=None,
    ):
        nonlinearity = _checked_nonlinearity(self, nonlinearity)
        super().__init__(
            input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype
        )
        self.nonlinearity = nonlinearity

    _step = RNNCell._step

    def extra_repr(self):  # torch's RNN prints no nonlinearity, even relu (its cell does)
        return LSTM.extra_repr(self)


__all__ = ["GRU", "GRUCell", "RNN", "RNNCell"]
