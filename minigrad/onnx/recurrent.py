"""ONNX for nn.LSTM, nn.GRU and nn.RNN calls: one ONNX LSTM / GRU / RNN node per layer, both
directions in it, `lengths` as its sequence_lens (so the reverse direction starts at each
sequence's last real step, and padded outputs are 0, as minigrad's).

ONNX orders the gates differently from torch (and so minigrad): LSTM i o f c for torch's
i f g o, GRU z r h for torch's r z n; the weights are reordered here. torch's GRU applies the
reset gate after the hidden product: ONNX's linear_before_reset=1.
"""

import numpy as np

from .graph import static
from .layers import _argument, converts

GATE_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN": [0]}


def _reordered(array, kind, hidden):
    return np.concatenate([array[i * hidden : (i + 1) * hidden] for i in GATE_ORDER[kind]])


@converts("LSTM", "GRU", "RNN")
def recurrent(g, call, value):
    module, kind = call.module, type(call.module).__name__
    from ..engine import Tensor

    if not isinstance(call.args[0], Tensor):
        raise NotImplementedError(f"{kind} over a PackedSequence (pass lengths= instead)")
    x = value(call.args[0])
    if len(g.dims[x]) != 3:
        raise NotImplementedError(f"{kind} over one unbatched sequence")
    hx, lengths = _argument(call, 1, "hx"), call.kwargs.get("lengths")
    hidden, directions = module.hidden_size, module.num_directions
    states = () if hx is None else tuple(hx) if kind == "LSTM" else (hx,)
    states = [value(state) for state in states]
    if module.batch_first:
        x = g.transpose(x, (1, 0, 2))  # ONNX's layout=1 is not in onnxruntime's CPU kernels
    steps, batch = g.dims[x][:2]
    sequence_lens = ""
    if lengths is not None:
        sequence_lens = g.node("Cast", [value(lengths)], to=g.onnx.TensorProto.INT32)
    settings = dict(hidden_size=hidden, direction="bidirectional" if directions == 2 else "forward")
    if kind == "GRU":
        settings["linear_before_reset"] = 1
    if kind == "RNN":
        settings["activations"] = [module.nonlinearity.capitalize()] * directions
    finals = [[] for _ in range(2 if kind == "LSTM" else 1)]
    for layer in range(module.num_layers):
        weights = {"ih": [], "hh": [], "bias": []}
        for suffix in module._suffixes(layer):
            for part in ("ih", "hh"):
                array = getattr(module, f"weight_{part}{suffix}")._data
                weights[part].append(_reordered(array, kind, hidden))
            if module.bias:
                weights["bias"].append(
                    np.concatenate(
                        [
                            _reordered(getattr(module, f"bias_{part}{suffix}")._data, kind, hidden)
                            for part in ("ih", "hh")
                        ]
                    )
                )
        inputs = [x, g.constant(np.stack(weights["ih"])), g.constant(np.stack(weights["hh"]))]
        inputs.append(g.constant(np.stack(weights["bias"])) if module.bias else "")
        inputs.append(sequence_lens)
        span = [layer * directions, (layer + 1) * directions]
        for state in states:
            inputs.append(g.node("Slice", [state, g.ints(span[:1]), g.ints(span[1:]), g.ints([0])]))
        outs = g.node(kind, inputs, outputs=1 + len(finals), **settings)
        g.dims[outs[0]] = [steps, static(directions), batch, static(hidden)]
        for final, name in zip(finals, outs[1:]):
            g.dims[name] = [static(directions), batch, static(hidden)]
            final.append(name)
        y = g.transpose(outs[0], (0, 2, 1, 3))  # (T, B, D, H)
        x = g.reshape(y, (steps[0], batch[0], directions * hidden))
    output = g.transpose(x, (1, 0, 2)) if module.batch_first else x
    results = [output]
    for final in finals:
        if len(final) == 1:
            results.append(final[0])
        else:
            joined = g.node("Concat", final, axis=0)
            g.dims[joined] = [static(len(final) * directions), batch, static(hidden)]
            results.append(joined)
    return results
