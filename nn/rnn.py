"""torch.nn.modules.rnn: the multi-layer (bidirectional) LSTM, GRU and RNN over padded or packed
batches, with PyTorch's parameters, arguments and results, and the checks they share. Their
cells and the gate equations are in nn/rnn_cell.py.

`LSTM` runs whole sequences as one graph node per layer (both directions, minigrad/ops/lstm.py):
padded positions are skipped, each step is one GEMM plus a fused kernel, and the two directions
run on two threads (minigrad/kernels/lstm.py). tests/ops/test_lstm.py checks it against LSTMCell
steps, tests/nn/test_rnn.py and tests/nn/test_rnn_cell.py both against PyTorch.

`GRU` and `RNN` run step by step with ordinary ops (the steps of GRUCell and RNNCell), so
their graph is the textbook one; the input projections of all steps are one product per layer.
"""

import math

import numpy as np

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from minigrad.ops import lstm_layer

from . import functional as F
from .linear import linear
from .module import Module, parameter_dtype
from .rnn_cell import RNNCell, _checked_nonlinearity, _gru_step, _uniform_parameter
from .utils.rnn import PackedSequence


class _RNNBase(Module):
    """What LSTM, GRU and RNN share (torch's RNNBase): their settings, and their parameters with
    torch's names and init, all U(-1/sqrt(H), 1/sqrt(H)): weight_ih_l{k}[_reverse] (gates * H,
    I_k), weight_hh_l{k}[_reverse] (gates * H, H), bias_ih_l{k}..., bias_hh_l{k}... (gates * H,)."""

    gates = None  # rows of weight_ih per hidden unit (LSTM 4, GRU 3, RNN 1)

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        *,
        device=None,
        dtype=None,
    ):
        super().__init__()
        name = type(self).__name__
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
        dtype = parameter_dtype(dtype, device, name)
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers = int(num_layers)
        # on each layer's output but the last, while training (torch's)
        self.dropout = float(dropout)
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.bidirectional = bool(bidirectional)
        self.num_directions = 2 if bidirectional else 1
        bound, rows = 1 / math.sqrt(hidden_size), self.gates * hidden_size
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * self.num_directions
            shapes = {"weight_ih": (rows, layer_input), "weight_hh": (rows, hidden_size)}
            if bias:
                shapes.update(bias_ih=(rows,), bias_hh=(rows,))
            for suffix in self._suffixes(layer):
                for weight, shape in shapes.items():
                    setattr(self, weight + suffix, _uniform_parameter(shape, bound, dtype))

    def flatten_parameters(self):
        """torch's cuDNN weight packing: nothing to do on the CPU (accepted for torch code's
        sake)."""

    def _suffixes(self, layer):
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.num_directions]

    def _directions(self, layer):
        """(weight_ih, weight_hh, bias_ih, bias_hh) of each direction of a layer (biases None if
        bias=False)."""
        return [
            tuple(
                getattr(self, name + suffix, None)
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            )
            for suffix in self._suffixes(layer)
        ]

    @staticmethod
    def _check_lengths(lengths, batch, steps, name="LSTM"):
        """lengths as an int64 array (B,) in [1, steps]; all `steps` when None. Whole numbers
        given as floats are taken, as torch casts lengths to int64."""
        if lengths is None:
            return np.full(batch, steps, dtype=np.int64)
        array = np.asarray(lengths._data if isinstance(lengths, mg.Tensor) else lengths)
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
    # no steps is refused as torch refuses it (a batch of 0 sequences runs)
    if x.shape[1 if module.batch_first and x.ndim == 3 else 0] == 0:
        raise ShapeError(f"{name}: expected at least one time step; got input of shape {x.shape}")
    return x


def _checked_states(module, x, hx):
    """The initial states for the input x, as the list [h0, c0] (LSTM) or [h0] (GRU, RNN): those of
    hx (the pair (h0, c0) for an LSTM, h0 for the others) or zeros if hx is None. Each has x's dtype
    and the shape (num_layers * num_directions, B, H), or (num_layers * num_directions, H) for an
    unbatched x, as torch requires. (x may be anything with x's shape, ndim and dtype.)"""
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
            f"{type(module).__name__}: lengths are for a padded batch; "
            f"unbatched input of shape {x.shape} is one sequence of {x.shape[0]} steps"
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


def _packed_call(module, packed, hx, lengths):
    """LSTM / GRU / RNN on a PackedSequence (torch's way of giving lengths): the padded batch and
    its lengths go through as usual, the output comes back packed."""
    if lengths is not None:
        raise TypeError(
            f"{type(module).__name__}: a PackedSequence carries its lengths; got lengths= too"
        )
    output, final = module.forward(packed.padded_as(module.batch_first), hx, lengths=packed.lengths)
    return packed.with_padded(output, module.batch_first), final


def _refuse_lengths_as_state(module, hx):
    """The second argument is hx, as in torch. Lengths given there (a list or a 1-D array or
    tensor of ints, as this library once took them) get a message that says so."""
    values = hx.numpy() if isinstance(hx, mg.Tensor) else hx
    looks_like_lengths = (
        isinstance(values, (list, np.ndarray))
        and not isinstance(hx, tuple)
        and np.asarray(values).ndim == 1
        and np.asarray(values).dtype.kind in "iu"
    )
    if looks_like_lengths:
        name = type(module).__name__
        raise TypeError(
            f"{name}.forward(input, hx=None, *, lengths=None): the second argument is the initial "
            f"state hx, as in torch; got what looks like lengths {np.asarray(values).tolist()}; "
            f"pass them by name: {name.lower()}(x, lengths=...)"
        )


class LSTM(_RNNBase):
    """Multi-layer (bidirectional) LSTM over padded batches, with PyTorch's parameters and results.

    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, *, device=None, dtype=None) (torch's order; device and dtype by name, as
    torch's eighth argument is proj_size; dropout applies to each layer's output but the last,
    while training). Parameters per layer k: weight_ih_l{k} (4H, I_k),
    weight_hh_l{k} (4H, H), bias_ih_l{k}, bias_hh_l{k} (4H,), and the same with suffix
    _reverse for the backward direction; I_0 = input_size, I_k = H * num_directions after.
    All U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch, so a state dict moves to torch.nn.LSTM and
    back unchanged.

    forward(input, hx=None, *, lengths=None) -> (output, (h_n, c_n)), torch's signature:
        x        (B, T, input_size) if batch_first else (T, B, input_size); or, as in torch,
                 one unbatched sequence (T, input_size) whatever batch_first, whose hx,
                 output and states then have no batch axis: (num_layers * D, H), (T, D*H)
        lengths  optional, by name only: (B,) ints in [1, T]: the batch is right-padded and
                 sequence b has lengths[b] real steps. The forward direction stops at each
                 sequence's last real step, the reverse direction starts there; outputs at padded
                 positions are exactly 0 (the same numbers as PyTorch with
                 pack_padded_sequence, padded back to T steps).
        hx       optional (h0, c0), each (num_layers * num_directions, B, H); zeros if None.
                 The second positional argument, as in torch (`lstm(x, (h0, c0))`).
        output   (B, T, D*H) or (T, B, D*H), D = 2 if bidirectional else 1: the last
                 layer's hidden states, directions concatenated (forward first).
        h_n, c_n (num_layers * D, B, H): each direction's state after its last real step
                 (for the reverse direction, after t = 0).
    """

    gates = 4
    _state_names = ("h0", "c0")  # what hx holds

    def forward(self, input, hx=None, *, lengths=None):
        x = input
        _refuse_lengths_as_state(self, hx)
        if isinstance(x, PackedSequence):
            return _packed_call(self, x, hx, lengths)
        x = _checked_input(self, x)
        if x.ndim == 2:
            return _unbatched_call(self, x, lengths, hx)
        return self._layers(x, None, x, hx, lengths)

    def _layers(self, x, rows, shaped, hx, lengths):
        """The layers over x (B, T, I) or (T, B, I), or over the table x (R, I) and rows (B, T) or
        (T, B) (nn.lstm_embedded); `shaped` has the dense input's shape and dtype."""
        batch, steps = shaped.shape[:2] if self.batch_first else shaped.shape[1::-1]
        lengths = self._check_lengths(lengths, batch, steps)
        h0, c0 = _checked_states(self, shaped, hx)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            span = slice(layer * self.num_directions, (layer + 1) * self.num_directions)
            x, h, c = lstm_layer(
                x, h0[span], c0[span], self._directions(layer), lengths, self.batch_first, rows
            )
            rows = None  # the later layers take the previous layer's output, (B, T, D * H)
            x = _between_layers(self, x, layer)
            h_n.append(h)
            c_n.append(c)
        if self.num_layers == 1:
            return x, (h_n[0], c_n[0])
        return x, (mg.cat(h_n, dim=0), mg.cat(c_n, dim=0))


class _StepByStep(_RNNBase):
    """What GRU and RNN share: torch's parameters, padded batches with lengths or packed input,
    an initial state, and a loop over the steps of each direction of each layer that calls
    `_step(input projection at t, h, weight_hh, bias_hh)`."""

    _state_names = ("hx",)

    def forward(self, input, hx=None, *, lengths=None):
        x, name = input, type(self).__name__
        _refuse_lengths_as_state(self, hx)
        if isinstance(x, PackedSequence):
            return _packed_call(self, x, hx, lengths)
        x = _checked_input(self, x)
        if x.ndim == 2:
            return _unbatched_call(self, x, lengths, hx)
        [hx] = _checked_states(self, x, hx)
        dtype = x.dtype
        x = x.transpose(0, 1) if self.batch_first else x  # (T, B, I) from here on
        steps, batch = x.shape[0], x.shape[1]
        lengths = self._check_lengths(lengths, batch, steps, name)
        if np.any(lengths < steps):
            # Padded positions may hold anything (NaN, inf): zeroed, they reach no product, and
            # the steps past a sequence's end (whose gradient is 0) stay finite, so that 0 times
            # their values adds nothing to a weight's gradient
            valid = np.arange(steps)[:, None, None] < lengths[None, :, None]  # (T, B, 1)
            x = mg.where(valid, x, 0.0)
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
                # past a sequence's end h stays as it was (reverse: until its last step)
                for t in order:
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
    bidirectional=False, *, device=None, dtype=None) (torch's order; dropout, device and dtype as
    LSTM's). Parameters per layer k: weight_ih_l{k} (3H, I_k), weight_hh_l{k} (3H, H),
    bias_ih_l{k}, bias_hh_l{k} (3H,), and the same with suffix _reverse; U(-1/sqrt(H),
    1/sqrt(H)) as in PyTorch, so state dicts move both ways.

    forward(input, hx=None, *, lengths=None) -> (output, h_n), as nn.LSTM's without the cell
    state:
        x        (B, T, input_size) if batch_first else (T, B, input_size)
        hx       optional h0 (num_layers * num_directions, B, H); zeros if None. The second
                 positional argument, as in torch (`gru(x, h0)`).
        lengths  optional, by name: (B,) ints in [1, T] for a right-padded batch (what torch
                 computes with pack_padded_sequence): outputs at padded positions are 0, and
                 h_n is each direction's state after its last real step.
        x may also be one unbatched sequence (T, input_size), as in torch (batch_first does
        not apply): hx, output and h_n then have no batch axis.
    """

    gates = 3

    @staticmethod
    def _step(inputs, h, weight_hh, bias_hh):
        return _gru_step(inputs, h, weight_hh, bias_hh)


class RNN(_StepByStep):
    """The plain (Elman) recurrent network, as torch.nn.RNN:

        h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)      (nonlinearity="relu": relu instead)

    RNN(input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, *, device=None, dtype=None) (torch's
    order); parameters weight_ih_l{k} (H, I_k), weight_hh_l{k} (H, H), biases (H,); forward as
    GRU's."""

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
        *,
        device=None,
        dtype=None,
    ):
        nonlinearity = _checked_nonlinearity(self, nonlinearity)
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )
        self.nonlinearity = nonlinearity

    _step = RNNCell._step

    def extra_repr(self):  # torch's RNN prints no nonlinearity, even relu (its cell does)
        return _RNNBase.extra_repr(self)


__all__ = ["LSTM", "GRU", "RNN"]
