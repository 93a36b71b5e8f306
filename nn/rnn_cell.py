"""torch.nn.modules.rnn's cells: LSTMCell, GRUCell and RNNCell, one step each, written with
engine ops (matmul, sigmoid, tanh, slicing), so their graph is the textbook one and every
gradient comes from the ops' own backward. The layers of nn/rnn.py run the same steps.

One LSTM step, gate order i, f, g, o as in PyTorch:

    i = sigmoid(x W_ii^T + h W_hi^T + b_i)      input gate: how much new content to write
    f = sigmoid(x W_if^T + h W_hf^T + b_f)      forget gate: how much of the old cell to keep
    g = tanh(x W_ig^T + h W_hg^T + b_g)         candidate content
    o = sigmoid(x W_io^T + h W_ho^T + b_o)      output gate: how much of the cell to show
    c' = f * c + i * g
    h' = o * tanh(c')

The four W_i* are stacked into weight_ih (4H, I), the four W_h* into weight_hh (4H, H).

One GRU step (Cho et al., 2014, the LSTM's lighter cousin), gate order r, z, n as in PyTorch:

    r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)     reset gate: how much of h the candidate sees
    z = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)     update gate: how much of h to keep
    n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))   candidate state
    h' = (1 - z) * n + z * h

The three W_i* are stacked into weight_ih (3H, I), the three W_h* into weight_hh (3H, H).

One step of the plain (Elman) RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).
"""

import math

import numpy as np

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, ShapeError

from . import init
from .linear import linear
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


def _checked_nonlinearity(module, nonlinearity):
    if nonlinearity not in ("tanh", "relu"):
        raise ArgumentError(
            f"{type(module).__name__}: nonlinearity must be 'tanh' or 'relu'; got {nonlinearity!r}"
        )
    return nonlinearity


def _cell_parameters(cell, gates, input_size, hidden_size, bias, device, dtype):
    """The sizes and parameters of an LSTMCell (4 gates) or GRUCell (3), torch's names and init:
    weight_ih (gates * H, I), weight_hh (gates * H, H), bias_ih, bias_hh (gates * H,) or None."""
    if input_size < 1 or hidden_size < 1:
        raise ArgumentError(
            f"{type(cell).__name__}: input_size and hidden_size must be >= 1; "
            f"got {input_size} and {hidden_size}"
        )
    dtype = parameter_dtype(dtype, device, type(cell).__name__)
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
                f"{name}: {state_name} dtype {state.dtype} does not match the parameters' dtype "
                f"{dtype}"
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

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        _cell_parameters(self, 4, input_size, hidden_size, bias, device, dtype)

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


class GRUCell(Module):
    """One GRU step: forward(x (B, I) or (I,), h (B, H) or (H,), optional) -> h' of h's shape.

    Parameters as torch.nn.GRUCell: weight_ih (3H, I), weight_hh (3H, H), bias_ih, bias_hh (3H,),
    all U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        _cell_parameters(self, 3, input_size, hidden_size, bias, device, dtype)

    def forward(self, x, h=None):
        x, (h,), unbatched = _cell_inputs(self, x, None if h is None else (h,), ("h",))
        h = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h.squeeze(0) if unbatched else h

    extra_repr = LSTMCell.extra_repr


class RNNCell(Module):
    """One step of the plain RNN: forward(x (B, I) or (I,), h (B, H) or (H,), optional) -> h' of h's
    shape,

        h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)      (nonlinearity="relu": relu instead)

    RNNCell(input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None)
    (torch's order);
    parameters as torch.nn.RNNCell: weight_ih (H, I), weight_hh (H, H), bias_ih, bias_hh (H,), all
    U(-1/sqrt(H), 1/sqrt(H)).
    """

    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        super().__init__()
        self.nonlinearity = _checked_nonlinearity(self, nonlinearity)
        _cell_parameters(self, 1, input_size, hidden_size, bias, device, dtype)

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


__all__ = ["LSTMCell", "GRUCell", "RNNCell"]
