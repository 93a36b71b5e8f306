"""Training helpers under torch's names (torch.nn.utils): clip_grad_norm_ and clip_grad_value_
live in minigrad.optim (next to the optimizers that follow them); parameters_to_vector and
vector_to_parameters turn a model's parameters into one flat vector and back; rnn pads and
packs batches of sequences of different lengths (pad_sequence, pack_padded_sequence ...)."""

import math

import numpy as np

import minigrad as mg
from minigrad.optim import clip_grad_norm_, clip_grad_value_

from . import rnn

# fmt: off
__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "rnn",
]
# fmt: on


def _tensors(parameters, name):
    parameters = [parameters] if isinstance(parameters, mg.Tensor) else list(parameters)
    for index, p in enumerate(parameters):
        if not isinstance(p, mg.Tensor):
            raise TypeError(f"{name}: parameter {index} must be a Tensor; got {type(p).__name__}")
    if not parameters:
        raise ValueError(f"{name}: got no parameters")
    return parameters


def parameters_to_vector(parameters):
    """Every parameter flattened and joined into one 1-D tensor, in order (torch's function). It is
    a graph result: gradients flow back to the parameters."""
    return mg.cat([p.reshape(-1) for p in _tensors(parameters, "parameters_to_vector")])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D `vec` into the parameters, in order (torch's function;
    not recorded in the graph). vec must hold exactly as many numbers as the parameters. Unlike
    torch's, the parameters keep their own memory: later changes of vec do not reach them."""
    if not isinstance(vec, mg.Tensor):
        raise TypeError(f"vector_to_parameters: vec must be a Tensor; got {type(vec).__name__}")
    parameters = _tensors(parameters, "vector_to_parameters")
    total = sum(p.numel() for p in parameters)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError(
            f"vector_to_parameters: vec must be 1-D with {total} numbers (the parameters' count); "
            f"got shape {vec.shape}"
        )
    start = 0
    for p in parameters:
        size = math.prod(p.shape)
        p._data[...] = np.asarray(vec._data[start : start + size]).reshape(p.shape)
        p._bump_version()
        start += size
