"""The saved-array check: a backward that would read an array changed since forward raises.

Every tensor has a version counter, a box (`[n]`) shared by the tensors that share its array
(`detach()`, views); every in-place path minigrad owns bumps it. When a node is recorded,
`record` notes the version of each tensor whose array the node saved for backward (and, for its
inputs, 16 sampled values: a change made straight into the numpy array behind minigrad's back
bumps no counter). `check` compares them before the node's backward runs. A first reading of the
engine may skip this file.
"""

import numpy as np


def record(saved, inputs, outputs):
    """[(version box, version now, array, sample or None)] per tensor whose array is saved."""
    saved_ids = {id(a) for a in saved if isinstance(a, np.ndarray)}
    if not saved_ids:
        return ()
    return [
        (t._version, t._version[0], t._data, _sample(t._data) if k < len(inputs) else None)
        for k, t in enumerate(inputs + outputs)
        if id(t._data) in saved_ids
    ]


def check(node):
    """Raise if an array that `node` saved was changed in place since it was recorded."""
    for box, version, array, sample in node._versions:
        if box[0] != version or (sample is not None and _sample(array) != sample):
            how = (
                f"is at version {box[0]}; expected version {version}"
                if box[0] != version
                else "was changed through .data"
            )
            raise RuntimeError(
                "one of the arrays needed for gradient computation has been modified by an "
                f"in-place operation: the {array.dtype} tensor of shape {array.shape} saved by "
                f"{node.name} {how}. Change it out of place (x = x + 1, not x += 1 or "
                "x.add_(1)), or after backward()."
            )


def _sample(array):
    """Up to 16 values spread over the array, as bytes: a cheap fingerprint of its contents
    (bytes compare NaN with itself and cost ~1 us; np.array_equal(equal_nan=True) cost ~15)."""
    step = max(1, array.size // 16)
    if array.flags.c_contiguous:  # a strided view of 16 values, no index array
        return array.reshape(-1)[: 16 * step : step].tobytes()
    return array.flat[np.arange(0, array.size, step)[:16]].tobytes()
