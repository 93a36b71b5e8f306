"""The engine: what a Tensor is, how an op records a graph node, how backward walks the graph.

Read the files in this order, each whole (docs/READING.md gives their sizes):

    tensor.py       Tensor: an array, requires_grad, grad, and the node that made it
    function.py     Function: an op's forward and backward, and the graph node of each use
    walk.py         the backward walk: topological order, sum_to, gradients passed back
    grad_sinks.py   where the walk's gradients go: `.grad`, or mg.autograd.grad's targets
    grad_mode.py    no_grad, enable_grad, inference_mode: when nodes are recorded

Beside them, for a later reading: versions.py (a backward refuses arrays changed in place since
forward), views.py (which tensors view which), inference.py (what inference_mode forbids).
The rest of Tensor's API is attached from outside the engine (minigrad/tensor_api.py, the ops
as methods in ops/__init__.py, devices in device.py). Nothing here imports a file above it.
"""

from . import higher_order
from .function import Function
from .tensor import Tensor
from .walk import graph_nodes, sum_to
