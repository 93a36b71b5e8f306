"""Which tensors view which: the notes that let an in-place change reach every view of an array.

`Function.apply` calls `note_views` on the outputs of every op. An output whose array views an
input's memory (reshape, transpose, `x[0]` ...) remembers that input (`_view_of`), shares its
version counter (a change through either is a change of both, as in torch), and is noted, by a
weak reference, on the root of its chain of views (`_views`). ops/inplace.py reads these notes
when a view is changed in place while a graph is recorded. A first reading of the engine may
skip this file.
"""

import weakref

import numpy as np


def note_views(outputs, inputs):
    """For each output tensor whose array views the memory of one of the input tensors."""
    for out in outputs:
        if out._data.base is None:
            continue
        out._view_of = next((t for t in inputs if shares_memory(out._data, t._data)), None)
        if out._view_of is not None:
            out._version = out._view_of._version
            _register_view(out)


def _register_view(view):
    """Note `view` on the tensor at the end of its chain of views (the one that views none), so
    that an in-place change of that tensor while recording can bring every view up to date."""
    root = view._view_of
    while root._view_of is not None:
        root = root._view_of
    if root._views is None:
        root._views = []
    elif len(root._views) >= 16 and len(root._views) & (len(root._views) - 1) == 0:
        # now and then: drop the dead
        root._views[:] = [ref for ref in root._views if ref() is not None]
    root._views.append(weakref.ref(view))


def shares_memory(view, array):
    """True when `view` shares memory with `array` (bounds that overlap are checked exactly)."""
    if not np.may_share_memory(view, array):
        return False
    try:
        return bool(np.shares_memory(view, array, max_work=10_000))
    # interleaved strides too costly to settle: count it as shared
    except np.exceptions.TooHardError:
        return True
