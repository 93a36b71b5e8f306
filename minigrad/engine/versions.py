"""The saved-array check: a backward that would read an array changed since forward raises.

Every tensor has a version counter, a box (`[n]`) shared by the tensors that share its array
(`detach()`, views); every in-place path minigrad owns bumps it. When a node is recorded,
`record` notes
- the version of each input or output tensor whose memory an array the node keeps for its
  backward shares (its saved arrays, and arrays among its attributes whatever their role: an
  LSTM's weight_hh, a pos_weight, views of them), and 16 values sampled from that tensor's
  array: a change made straight into the numpy array (through `.numpy()` or a numpy view of
  it) bumps no counter;
- a CRC-32 of every integer or bool array the node keeps (indices, masks, targets: an
  embedding's ids, gather's index, where's condition, an attention mask), so that any change
  to one of them is seen, however it was made.
`check` compares them before the node's backward runs. What is caught, exactly: every in-place
change through minigrad (any array); every change to an integer or bool array a node holds;
a change straight into a saved float array when it moves one of the 16 sampled values. A first
reading of the engine may skip this file.
"""

import zlib

import numpy as np


def record(node, inputs, outputs):
    """What check(node) compares: [(version box, version now, array, sample)] per tensor whose
    memory an array the node keeps shares, then [(array, crc)] per integer or bool array the
    node keeps."""
    kept = _kept_arrays(node)
    if not kept:
        return ()
    roots = {id(_root(array)) for array in kept}
    tensors = [
        (t._version, t._version[0], t._data, _sample(t._data))
        for t in inputs + outputs
        if id(_root(t._data)) in roots
    ]
    held = [(array, _crc(array)) for array in kept if array.dtype.kind in "biu" and array.size]
    return (tensors, held) if tensors or held else ()


# A node's own fields, which hold the graph, not what its backward reads
_STRUCTURE = {"inputs", "input_edges", "needs_input_grad", "output_meta", "module_frame"}
_STRUCTURE |= {"attrs", "recording", "_versions", "_hooks", "saved"}


def _kept_arrays(node):
    """Every numpy array the node keeps for its backward, each once: its saved arrays and its
    attributes, looking inside tuples, lists, dicts and minigrad's own state objects (an
    LSTM's LayerState) three levels deep, whatever role the array plays (a weight, a mask)."""
    found = {}

    def visit(value, depth):
        if isinstance(value, np.ndarray):
            found[id(value)] = value
        elif depth == 0 or isinstance(value, (str, bytes, int, float)):
            return
        elif isinstance(value, (tuple, list)):
            for item in value:
                visit(item, depth - 1)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item, depth - 1)
        elif type(value).__module__.startswith("minigrad.kernels") and hasattr(value, "__dict__"):
            for item in vars(value).values():
                visit(item, depth - 1)

    visit(node.saved, 3)
    for key, value in node.__dict__.items():
        if key not in _STRUCTURE:
            visit(value, 3)
    return list(found.values())


def _root(array):
    """The array whose memory `array` views (itself when it views none)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _crc(array):
    return zlib.crc32(memoryview(np.ascontiguousarray(array)).cast("B"))


def check(node):
    """Raise if an array that `node` saved or holds was changed since it was recorded."""
    if not node._versions:
        return
    tensors, held = node._versions
    for box, version, array, sample in tensors:
        if box[0] != version or _sample(array) != sample:
            how = (
                f"is at version {box[0]}; expected version {version}"
                if box[0] != version
                else "was changed outside minigrad (through its numpy array)"
            )
            _refuse(node, array, how)
    for array, crc in held:
        if _crc(array) != crc:
            _refuse(node, array, "(an index, mask or target) was changed")


def _refuse(node, array, how):
    raise RuntimeError(
        "one of the arrays needed for gradient computation has been modified by an in-place "
        f"operation: the {array.dtype} tensor of shape {array.shape} saved by {node.name} {how}. "
        "Change it out of place (x = x + 1, not x += 1 or x.add_(1)), or after backward()."
    )


def _sample(array):
    """Up to 16 values spread over the array, as bytes: a cheap fingerprint of its contents
    (bytes compare NaN with itself and cost ~1 us; np.array_equal(equal_nan=True) cost ~15)."""
    step = max(1, array.size // 16)
    if array.flags.c_contiguous:  # a strided view of 16 values, no index array
        return array.reshape(-1)[: 16 * step : step].tobytes()
    return array.flat[np.arange(0, array.size, step)[:16]].tobytes()
