"""LSTM: a cell written with engine ops (the readable reference) and a fused layer (the fast one).

One LSTM step, gate order i, f, g, o as in PyTorch:

    i = sigmoid(x W_ii^T + h W_hi^T + b_i)      input gate: how much new content to write
    f = sigmoid(x W_if^T + h W_hf^T + b_f)      forget gate: how much of the old cell to keep
    g = tanh(x W_ig^T + h W_hg^T + b_g)         candidate content
    o = sigmoid(x W_io^T + h W_ho^T + b_o)      output gate: how much of the cell to show
    c' = f * c + i * g
    h' = o * tanh(c')

The four W_i* are stacked into weight_ih (4H, I), the four W_h* into weight_hh (4H, H).

`LSTMCell` computes one step with matmul, sigmoid, tanh and slicing: its graph is the
textbook one and every gradient comes from the ops' own backward. `LSTM` runs whole
sequences as one graph node per layer (both directions, minigrad/ops/lstm.py): padded
positions are skipped, each step is one GEMM plus a fused kernel, and the two directions
run on two threads (minigrad/kernels/lstm.py). tests/test_lstm.py checks one against the
other and both against PyTorch.
"""

import math

import numpy as np

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from minigrad.ops import lstm_layer

from . import init
from . import functional as F
from .linear import linear
from .utils import rnn
from .module import Module, Parameter, parameter_dtype


def _uniform_parameter(shape, bound, dtype):
    parameter = Parameter(np.empty(shape, dtype=dtype))
    init.uniform_(parameter, -bound, bound)
    return parameter


def lstm_cell(x, state, weight_ih, weight_hh, bias_ih=None, bias_hh=None):
    """One LSTM step from engine ops: x (B, I), state (h, c) (B, H) each -> (h', c')."""
    h, c = state
    gates = linear(x, weight_ih, bias_ih) + linear(h, weight_hh, bias_hh)
    size = h.shape[-1]
    i = gates[:, :size].sigmoid()
    f = gates[:, size : 2 * size].sigmoid()
    g = gates[:, 2 * size : 3 * size].tanh()
    o = gates[:, 3 * size :].sigmoid()
    c = f * c + i * g
    h = o * c.tanh()
    return h, c


def _cell_parameters(cell, gates, input_size, hidden_size, bias, dtype):
    """The sizes and parameters of an LSTMCell (4 gates) or GRUCell (3), torch's names and init:
    weight_ih (gates * H, I), weight_hh (gates * H, H), bias_ih, bias_hh (gates * H,) or None."""
    if input_size < 1 or hidden_size < 1:
        raise ArgumentError(
            f"{type(cell).__name__}: input_size and hidden_size must be >= 1; got {input_size} and "
            f"{hidden_size}"
        )
    dtype = parameter_dtype(dtype)
    cell.input_size, cell.hidden_size = int(input_size), int(hidden_size)
    bound = 1 / math.sqrt(hidden_size)
    cell.weight_ih = _uniform_parameter((gates * hidden_size, input_size), bound, dtype)
    cell.weight_hh = _uniform_parameter((gates * hidden_size, hidden_size), bound, dtype)
    for name in ("bias_ih", "bias_hh"):
        cell.register_parameter(
            name, _uniform_parameter((gates * hidden_size,), bound, dtype) if bias else None
        )


def _cell_inputs(cell, x, states, names):
    """What a cell's forward checks: x (B, I), or torch's unbatched (I,), and its states named
    `names` (h; or h, c), each (B, H), or (H,) for an unbatched x; zeros where states is None.
    Returns x as (B, I), the states as (B, H) each, and whether x was unbatched (the cell then
    gives back (H,) results)."""
    name = type(cell).__name__
    x = x if isinstance(x, mg.Tensor) else mg.tensor(x)
    dtype = cell.weight_ih.dtype
    if x.ndim not in (1, 2) or x.shape[-1] != cell.input_size:
        raise ShapeError(
            f"{name}: expected input of shape (batch, input_size={cell.input_size}) or unbatched "
            f"(input_size={cell.input_size},); got shape {x.shape}"
        )
    if x.dtype != dtype:
        raise DTypeError(
            f"{name}: input dtype {x.dtype} does not match the parameters' dtype {dtype}"
        )
    unbatched = x.ndim == 1
    if unbatched:
        shape, layout = (cell.hidden_size,), f"(hidden_size={cell.hidden_size},)"
    else:
        shape, layout = (
            (x.shape[0], cell.hidden_size),
            f"(batch={x.shape[0]}, hidden_size={cell.hidden_size})",
        )
    if states is None:
        states = [mg.zeros(*shape, dtype=dtype)] * len(names)
    for state_name, state in zip(names, states):
        if not isinstance(state, mg.Tensor):
            raise TypeError(f"{name}: {state_name} must be a Tensor; got {type(state).__name__}")
        if state.shape != shape:
            raise ShapeError(
                f"{name}: expected {state_name} of shape {layout} for input of shape {x.shape}; "
                f"got {state.shape}"
            )
        if state.dtype != dtype:
            raise DTypeError(
                f"{name}: {state_name} dtype {state.dtype} does not match the parameters' dtype {dtype}"
            )
    if unbatched:
        return x.unsqueeze(0), [state.unsqueeze(0) for state in states], True
    return x, list(states), False


class LSTMCell(Module):
    """One LSTM step from engine ops: forward(x (B, I), (h, c) (B, H) each, optional) -> (h', c'),
    or unbatched as torch: x (I,), (h, c) (H,) each -> (h', c') (H,) each.

    Parameters as torch.nn.LSTMCell: weight_ih (4H, I), weight_hh (4H, H), bias_ih, bias_hh
    (4H,), all U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, input_size, hidden_size, bias=True, dtype=None):
        super().__init__()
        _cell_parameters(self, 4, input_size, hidden_size, bias, dtype)

    def forward(self, x, state=None):
        if state is not None and not (isinstance(state, (tuple, list)) and len(state) == 2):
            raise TypeError(
                f"LSTMCell: the state must be the pair (h, c); got {type(state).__name__}"
            )
        x, (h, c), unbatched = _cell_inputs(self, x, state, ("h", "c"))
        h, c = lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)

    def extra_repr(self):  # torch's: the sizes, then bias only when off
        return f"{self.input_size}, {self.hidden_size}" + (
            "" if self.bias_ih is not None else ", bias=False"
        )


def _recurrent_parameters(
    module,
    gates,
    input_size,
    hidden_size,
    num_layers,
    bias,
    batch_first,
    bidirectional,
    dtype,
    dropout=0.0,
):
    """The settings and the parameters of an LSTM (4 gates) or GRU (3) with torch's names and init:
    weight_ih_l{k}[_reverse] (gates * H, I_k), weight_hh_l{k}... (gates * H, H), biases (gates * H,)."""
    name = type(module).__name__
    if input_size < 1 or hidden_size < 1 or num_layers < 1:
        raise ArgumentError(
            f"{name}: input_size, hidden_size and num_layers must be >= 1; "
            f"got {input_size}, {hidden_size}, {num_layers}"
        )
    if (
        isinstance(dropout, bool)
        or not isinstance(dropout, (int, float, np.floating))
        or not 0 <= dropout <= 1
    ):
        raise ArgumentError(f"{name}: dropout must be a probability in [0, 1]; got {dropout!r}")
    dtype = parameter_dtype(dtype)
    module.input_size, module.hidden_size, module.num_layers = (
        int(input_size),
        int(hidden_size),
        int(num_layers),
    )
    module.dropout = float(dropout)  # on each layer's output but the last, while training (torch's)
    module.bias, module.batch_first, module.bidirectional = (
        bool(bias),
        bool(batch_first),
        bool(bidirectional),
    )
    module.num_directions = 2 if bidirectional else 1
    bound = 1 / math.sqrt(hidden_size)
    for layer in range(num_layers):
        layer_input = input_size if layer == 0 else hidden_size * module.num_directions
        for suffix in module._suffixes(layer):
            setattr(
                module,
                f"weight_ih{suffix}",
                _uniform_parameter((gates * hidden_size, layer_input), bound, dtype),
            )
            setattr(
                module,
                f"weight_hh{suffix}",
                _uniform_parameter((gates * hidden_size, hidden_size), bound, dtype),
            )
            if bias:
                setattr(
                    module,
                    f"bias_ih{suffix}",
                    _uniform_parameter((gates * hidden_size,), bound, dtype),
                )
                setattr(
                    module,
                    f"bias_hh{suffix}",
                    _uniform_parameter((gates * hidden_size,), bound, dtype),
                )


def _checked_input(module, x):
    """x as a tensor of shape (B, T, I) or (T, B, I), or torch's unbatched (T, I), with at least one
    step and the parameters' dtype; or an error naming what was expected and what was given."""
    name = type(module).__name__
    x = x if isinstance(x, mg.Tensor) else mg.tensor(x)
    dtype = module.weight_ih_l0.dtype
    if x.ndim not in (2, 3) or x.shape[-1] != module.input_size:
        layout = "(batch, time, input_size)" if module.batch_first else "(time, batch, input_size)"
        raise ShapeError(
            f"{name}: expected input of shape {layout} or unbatched (time, input_size), with "
            f"input_size={module.input_size}; got shape {x.shape}"
        )
    if x.dtype != dtype:
        raise DTypeError(
            f"{name}: input dtype {x.dtype} does not match the parameters' dtype {dtype}"
        )
    if (
        x.shape[1 if module.batch_first and x.ndim == 3 else 0] == 0
    ):  # as torch (a batch of 0 sequences runs)
        raise ShapeError(f"{name}: expected at least one time step; got input of shape {x.shape}")
    return x


def _checked_states(module, x, hx):
    """The initial states for the input x, as the list [h0, c0] (LSTM) or [h0] (GRU, RNN): those of
    hx (the pair (h0, c0) for an LSTM, h0 for the others) or zeros if hx is None. Each has x's dtype
    and the shape (num_layers * num_directions, B, H), or (num_layers * num_directions, H) for an
    unbatched x, as torch requires."""
    name, names = type(module).__name__, module._state_names
    layers = module.num_layers * module.num_directions
    if x.ndim == 2:
        shape, layout = (layers, module.hidden_size), "(num_layers * num_directions, hidden_size)"
    else:
        batch = x.shape[0 if module.batch_first else 1]
        shape, layout = (
            (layers, batch, module.hidden_size),
            "(num_layers * num_directions, batch, hidden_size)",
        )
    if hx is None:
        return [mg.zeros(*shape, dtype=x.dtype)] * len(names)
    states = list(hx) if len(names) == 2 and isinstance(hx, (tuple, list)) else [hx]
    if len(states) != len(names):
        length = f" of length {len(hx)}" if isinstance(hx, (tuple, list)) else ""
        raise TypeError(
            f"{name}: expected hx as the pair (h0, c0); got {type(hx).__name__}{length}"
        )
    kind = "unbatched input" if x.ndim == 2 else "input"
    for state_name, state in zip(names, states):
        if not isinstance(state, mg.Tensor):
            raise TypeError(f"{name}: {state_name} must be a Tensor; got {type(state).__name__}")
        if state.shape != shape or state.dtype != x.dtype:
            raise ShapeError(
                f"{name}: expected {state_name} of shape {shape} {layout} and dtype {x.dtype} for "
                f"{kind} of shape {x.shape}; got shape {state.shape}, dtype {state.dtype}"
            )
    return states


def _unbatched_call(module, x, lengths, hx):
    """LSTM / GRU / RNN on torch's unbatched input x (T, I): one sequence, run as a batch of one
    (batch_first does not apply, as in torch), with states (num_layers * num_directions, H) in
    and out, and output (T, D * H)."""
    if lengths is not None:
        raise ArgumentError(
            f"{type(module).__name__}: lengths are for a padded batch; unbatched input of shape "
            f"{x.shape} is one sequence of {x.shape[0]} steps"
        )
    states = [state.unsqueeze(1) for state in _checked_states(module, x, hx)]
    batch_dim = 0 if module.batch_first else 1
    output, final = module.forward(
        x.unsqueeze(batch_dim), hx=tuple(states) if len(states) == 2 else states[0]
    )
    final = (
        tuple(state.squeeze(1) for state in final) if isinstance(final, tuple) else final.squeeze(1)
    )
    return output.squeeze(batch_dim), final


def _between_layers(module, x, layer):
    """x, the output of `layer`, as the next layer takes it: with dropout while training."""
    if module.dropout and module.training and layer < module.num_layers - 1:
        return F.dropout(x, module.dropout, training=True)
    return x


def flatten_parameters(module):
    """torch's cuDNN weight packing: nothing to do on the CPU (accepted for torch code's sake)."""


def _packed_call(module, packed, state, hx):
    """LSTM / GRU on a PackedSequence (torch's way of giving lengths): the padded batch and its
    lengths go through as usual, the output comes back packed. The initial state may be the
    second argument, as in torch (`lstm(packed, (h0, c0))`)."""
    if state is not None and hx is not None:
        raise TypeError(
            f"{type(module).__name__}: give the initial state once (second argument or hx=)"
        )
    output, final = module.forward(
        packed.padded_as(module.batch_first), lengths=packed.lengths, hx=state if hx is None else hx
    )
    return packed.with_padded(output, module.batch_first), final


class LSTM(Module):
    """Multi-layer (bidirectional) LSTM over padded batches, with PyTorch's parameters and results.

    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, dtype=None) (torch's order; dropout applies to each layer's output but
    the last, while training). Parameters per layer k: weight_ih_l{k} (4H, I_k),
    weight_hh_l{k} (4H, H), bias_ih_l{k}, bias_hh_l{k} (4H,), and the same with suffix
    _reverse for the backward direction; I_0 = input_size, I_k = H * num_directions after.
    All U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch, so a state dict moves to torch.nn.LSTM and
    back unchanged.

    forward(x, lengths=None, hx=None) -> (output, (h_n, c_n)):
        x        (B, T, input_size) if batch_first else (T, B, input_size); or, as in torch,
                 one unbatched sequence (T, input_size) whatever batch_first, whose hx,
                 output and states then have no batch axis: (num_layers * D, H), (T, D*H)
        lengths  optional (B,) ints in [1, T]: the batch is right-padded and sequence b has
                 lengths[b] real steps. The forward direction stops at each sequence's
                 last real step, the reverse direction starts there; outputs at padded
                 positions are exactly 0 (the same numbers as PyTorch with
                 pack_padded_sequence, padded back to T steps).
        hx       optional (h0, c0), each (num_layers * num_directions, B, H); zeros if None.
                 (PyTorch takes hx as the second positional argument; here pass it by name.)
        output   (B, T, D*H) or (T, B, D*H), D = 2 if bidirectional else 1: the last
                 layer's hidden states, directions concatenated (forward first).
        h_n, c_n (num_layers * D, B, H): each direction's state after its last real step
                 (for the reverse direction, after t = 0).
    """

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
        super().__init__()
        _recurrent_parameters(
            self,
            4,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            bidirectional,
            dtype,
            dropout,
        )

    _state_names = ("h0", "c0")  # what hx holds
    flatten_parameters = flatten_parameters

    def _suffixes(self, layer):
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.num_directions]

    def _directions(self, layer):
        """(weight_ih, weight_hh, bias_ih, bias_hh) of each direction of a layer (biases None if bias=False)."""
        return [
            tuple(
                getattr(self, name + suffix, None)
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            )
            for suffix in self._suffixes(layer)
        ]

    def forward(self, x, lengths=None, hx=None):
        if isinstance(x, rnn.PackedSequence):
            return _packed_call(self, x, lengths, hx)
        if isinstance(lengths, tuple):
            raise TypeError(
                "LSTM.forward(x, lengths=None, hx=None): the second argument is lengths; "
                "pass the initial state by name: lstm(x, hx=(h0, c0))"
            )
        x = _checked_input(self, x)
        if x.ndim == 2:
            return _unbatched_call(self, x, lengths, hx)
        batch, steps = (x.shape[0], x.shape[1]) if self.batch_first else (x.shape[1], x.shape[0])
        lengths = self._check_lengths(lengths, batch, steps)
        h0, c0 = _checked_states(self, x, hx)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            rows = slice(layer * self.num_directions, (layer + 1) * self.num_directions)
            x, h, c = lstm_layer(
                x, h0[rows], c0[rows], self._directions(layer), lengths, self.batch_first
            )
            x = _between_layers(self, x, layer)
            h_n.append(h)
            c_n.append(c)
        if self.num_layers == 1:
            return x, (h_n[0], c_n[0])
        return x, (mg.cat(h_n, dim=0), mg.cat(c_n, dim=0))

    @staticmethod
    def _check_lengths(lengths, batch, steps, name="LSTM"):
        """lengths as an int64 array (B,) in [1, steps]; all `steps` when None. Whole numbers
        given as floats are taken, as torch casts lengths to int64."""
        if lengths is None:
            return np.full(batch, steps, dtype=np.int64)
        array = np.asarray(lengths.data if isinstance(lengths, mg.Tensor) else lengths)
        if (
            array.dtype.kind == "f"
            and np.all(np.isfinite(array))
            and np.all(array == np.round(array))
        ):
            array = array.astype(np.int64)
        if array.dtype.kind not in "iu":
            raise DTypeError(f"{name}: lengths must be integers; got dtype {array.dtype}")
        if array.shape != (batch,):
            raise ShapeError(
                f"{name}: expected lengths of shape (batch={batch},); got shape {array.shape}"
            )
        if array.size and (array.min() < 1 or array.max() > steps):
            raise ArgumentError(
                f"{name}: lengths must be in [1, {steps}] (the padded length); "
                f"got min {array.min()}, max {array.max()}"
            )
        return array.astype(np.int64)

    def extra_repr(self):
        options = [
            ("num_layers", self.num_layers, 1),
            ("bias", self.bias, True),
            ("batch_first", self.batch_first, False),
            ("dropout", self.dropout, 0.0),
            ("bidirectional", self.bidirectional, False),
        ]
        return ", ".join(
            [f"{self.input_size}, {self.hidden_size}"]
            + [f"{name}={value}" for name, value, default in options if value != default]
        )


__all__ = ["LSTM", "LSTMCell"]
