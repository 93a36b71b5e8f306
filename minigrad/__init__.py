"""minigrad: a tensor autograd framework written from scratch (numpy + Numba).

    import minigrad as mg
    from minigrad import nn

    x = mg.randn(4, 3, requires_grad=True)
    loss = mg.cross_entropy(x @ w, mg.tensor([0, 1, 1, 0]))
    loss.backward()

The engine (tensor, ops, optim, viz, io) does not import the layers: `mg.nn` (minigrad.nn, whose
source is the repository's top-level nn/ folder) is loaded on first use.
"""

import importlib

from . import tensor_api  # noqa: F401  (the rest of Tensor's API, attached to the class)
from . import accelerator, amp, backends, cuda, distributed, dtypes, ops, optim, parallel
from . import autograd, func, utils, viz
from .backends import get_float32_matmul_precision, set_float32_matmul_precision
from .amp import autocast, bfloat16, float16, half
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .engine.grad_mode import is_inference_mode_enabled
from .creation import arange, as_tensor, bernoulli, empty, empty_like, eye, from_numpy
from .creation import full, full_like, get_rng_state, linspace, multinomial
from .creation import normal, ones, ones_like, rand, rand_like, randint, randn
from .creation import randn_like, randperm, set_rng_state, tensor, zeros, zeros_like
from .dtypes import bool_ as bool, float32, float64, get_default_dtype
from .dtypes import int32, int64, set_default_dtype, uint8
from .errors import ArgumentError, DimError, DTypeError, ShapeError
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .io import load, load_safetensors, save, save_safetensors
from .device import device
from .ops import registry as _registry
from .random import Generator, default_generator, manual_seed
from .engine import Function, Tensor
from .parameter import Parameter

# torch.autograd.gradcheck and .gradgradcheck: the paths torch programs call them by
autograd.gradcheck, autograd.gradgradcheck = gradcheck, gradgradcheck

__version__ = "0.1.0"

# torch's other names of the dtypes (mg.float and mg.int, like mg.bool, are not in __all__)
long, double, float, int = int64, float64, float32, int32


# The ops' public names (mg.exp, mg.cat, mg.cross_entropy ...), each declared once with its op.
globals().update(_registry.public_names())


def is_tensor(obj):
    """True for a minigrad Tensor (Parameters included)."""
    return isinstance(obj, Tensor)


def compile(model=None, **options):
    """torch.compile's call, which returns `model` itself: minigrad runs eagerly, and eager
    already computes torch's numbers. Also a decorator (@mg.compile, @mg.compile(mode=...))."""
    if model is None:
        return lambda function: function
    return model


# What `from minigrad import *` gives: the ops' public names (registry.exported() leaves out
# those that shadow Python's builtins: sum, max, min, abs, all, any, pow, round; reached as mg.sum
# ...) and the names below, without bool, float and int; no numpy.
# fmt: off
__all__ = [
    "Tensor", "Parameter", "Function", "tensor", "as_tensor", "from_numpy", "is_tensor",
    "zeros", "ones", "empty", "full", "eye", "arange", "linspace", "zeros_like", "ones_like",
    "empty_like", "full_like", "randn", "rand", "randint", "randperm", "multinomial",
    "randn_like", "rand_like", "manual_seed", "Generator", "default_generator",
    "get_rng_state", "set_rng_state", "bernoulli", "normal", "float32", "float64", "int64",
    "int32", "uint8", "long", "double", "get_default_dtype", "set_default_dtype", "no_grad",
    "enable_grad", "inference_mode", "is_inference_mode_enabled", "is_grad_enabled",
    "set_grad_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "save", "load",
    "save_safetensors", "load_safetensors", "device", "accelerator", "cuda", "backends", "amp",
    "autocast", "set_float32_matmul_precision", "get_float32_matmul_precision", "optim",
    "parallel", "viz", "nn", "ShapeError", "DTypeError", "DimError", "ArgumentError",
    *_registry.exported(),
]
# fmt: on


def __getattr__(name):
    # PEP 562: `mg.nn` (and `from minigrad import nn`) loads the layers on first use, so that
    # importing the engine does not import every layer.
    if name == "nn":
        return importlib.import_module("minigrad.nn")
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
