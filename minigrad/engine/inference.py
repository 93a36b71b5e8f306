"""What inference_mode forbids later (torch's rules), in one file beside the engine.

A tensor made inside `mg.inference_mode()` is an *inference tensor* (`Tensor._inference`, set
when it is made; a view of one is one too). Outside inference mode it cannot be saved for a
backward, changed in place, or asked for a gradient (`Tensor.requires_grad_` checks that
one). A first reading of the engine may skip this file.
"""

import numpy as np

from . import grad_mode


def mark_views(results):
    """A view is an inference tensor when what it views is (torch's rule)."""
    for out in results:
        if out._view_of is not None:
            out._inference = out._view_of._inference


def refuse_saved(node, tensors):
    """Raise when `node` saved the array of an inference tensor among its inputs."""
    if not any(t._inference for t in tensors):
        return
    saved = {id(array) for array in node.saved if isinstance(array, np.ndarray)}
    for t in tensors:
        if t._inference and id(t._data) in saved:
            raise RuntimeError(
                f"{node.name}: one of its inputs, a tensor of shape {t.shape}, was made inside "
                "mg.inference_mode(), and inference tensors cannot be saved for backward "
                "(as in torch). Make the tensor outside inference_mode, or use a clone() of it."
            )


def refuse_inplace(tensor):
    """An inference tensor changes in place only inside inference mode."""
    if tensor._inference and not grad_mode.is_inference_mode_enabled():
        raise RuntimeError(
            "this tensor was made inside mg.inference_mode(), so it cannot be changed in "
            "place outside it (as in torch); change a clone() of it instead"
        )
