"""Hook handles, and the machinery of full backward hooks (Module.register_full_backward_hook).

A module's forward hooks need nothing but a dict; its full backward hooks need two identity
nodes in the graph (GradientTap), one around a call's tensor inputs and one around its
outputs, so that backward tells the hooks the gradients at both ends of the call.
"""

import itertools
import warnings

import numpy as np

from minigrad.errors import DTypeError, ShapeError
from minigrad.tensor import GradientTap, Tensor


class RemovableHandle:
    """Returned by the register_*_hook methods: `remove()` unregisters the hook (removing twice is
    harmless); `with handle:` removes it at the end of the block."""

    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class BackwardHooks:
    """One call's full backward hooks, as torch runs them: a GradientTap (one identity node)
    around the call's positional tensor inputs that require grad, and one around its outputs
    that do. Backward reaches the outputs' tap first, which keeps grad_output (after the
    pre-hooks, which may replace it); the inputs' tap then has grad_input and calls the hooks.
    The hooks are those registered at the call, as in torch."""

    def __init__(self, module):
        self.module, self.name = module, type(module).__name__
        self.pre_hooks = [hook for (hook,) in module._backward_pre_hooks.values()]
        self.hooks = [hook for (hook,) in module._backward_hooks.values()]
        self.grad_output = None  # set by the outputs' tap, used by the inputs' tap

    def tap_inputs(self, args):
        self.args = args
        args, self.input_positions = _tap(args, self._at_inputs)
        return args

    def tap_outputs(self, output):
        if not isinstance(output, (Tensor, tuple)):
            warnings.warn(
                f"{self.name}'s backward hooks will not run: its output is a {type(output).__name__}; "
                f"they need a Tensor or a tuple of Tensors (as in torch)",
                stacklevel=3,
            )
            return output
        outputs, self.output_positions = _tap(
            output if isinstance(output, tuple) else (output,), self._at_outputs
        )
        self.output_count = len(outputs)
        return outputs if isinstance(output, tuple) else outputs[0]

    def _at_outputs(self, grads):
        grad_output = [None] * self.output_count
        for position, grad in zip(self.output_positions, grads):
            grad_output[position] = Tensor._wrap(grad)
        grad_output = self._after_hooks(
            self.pre_hooks,
            lambda hook, grads: hook(self.module, grads),
            tuple(grad_output),
            "backward pre-hook",
            "grad_output",
        )
        if (
            self.input_positions is None
        ):  # no input requires grad, so there is no inputs' tap to call the hooks
            warnings.warn(
                f"a full backward hook of {self.name} runs with the gradients of the outputs only: no input "
                f"requires grad in this call, so grad_input is all None (as in torch)",
                stacklevel=2,
            )
            grad_input = (None,) * len(self.args)
            for hook in self.hooks:
                result = hook(self.module, grad_input, grad_output)
                if result is not None and not (
                    isinstance(result, (tuple, list)) and all(g is None for g in result)
                ):
                    raise RuntimeError(
                        f"a backward hook of {self.name} returned gradients, but no input of this call "
                        f"requires grad: it may only return None (or Nones)"
                    )
        else:
            self.grad_output = grad_output
        return _arrays(grad_output, self.output_positions)

    def _at_inputs(self, grads):
        if self.grad_output is None:  # the gradient came to the inputs without passing the outputs
            return grads
        grad_input = [None] * len(self.args)
        for position, value in enumerate(
            self.args
        ):  # torch's zeros for a tensor that does not require grad
            if isinstance(value, Tensor):
                grad_input[position] = Tensor._wrap(np.zeros(value.shape, value.dtype))
        for position, grad in zip(self.input_positions, grads):
            grad_input[position] = Tensor._wrap(grad)
        grad_input = self._after_hooks(
            self.hooks,
            lambda hook, grads: hook(self.module, grads, self.grad_output),
            tuple(grad_input),
            "backward hook",
            "grad_input",
        )
        self.grad_output = None
        return _arrays(grad_input, self.input_positions)

    def _after_hooks(self, hooks, call, grads, kind, what):
        """`grads` after each hook in turn: call(hook, grads) returns None (no change) or a tuple
        like grads, a Tensor of the same shape and dtype or None where grads has a Tensor."""
        expected = grads
        for hook in hooks:
            result = call(hook, grads)
            if result is None:
                continue
            if not isinstance(result, (tuple, list)):
                raise TypeError(
                    f"a {kind} of {self.name} must return None or a tuple of {len(expected)} {what}; got "
                    f"{type(result).__name__}"
                )
            if len(result) != len(expected):
                raise RuntimeError(
                    f"a {kind} of {self.name} returned {len(result)} {what}; expected {len(expected)} "
                    f"(one per {'positional argument' if what == 'grad_input' else 'output'})"
                )
            for position, (new, old) in enumerate(zip(result, expected)):
                if (
                    new is None or old is None
                ):  # None stops a gradient; where there is none, nothing is read
                    continue
                if not isinstance(new, Tensor):
                    raise TypeError(
                        f"a {kind} of {self.name} returned a {type(new).__name__} as {what}[{position}]; "
                        f"expected a Tensor or None"
                    )
                if new.shape != old.shape:
                    raise ShapeError(
                        f"a {kind} of {self.name} returned {what}[{position}] of shape {new.shape}; "
                        f"expected shape {old.shape}"
                    )
                if new.dtype != old.dtype:
                    raise DTypeError(
                        f"a {kind} of {self.name} returned {what}[{position}] of dtype {new.dtype}; "
                        f"expected dtype {old.dtype}"
                    )
            grads = tuple(result)
        return grads


def _tap(values, on_backward):
    """(values with their tensors that require grad put through one GradientTap, their positions),
    or (values, None) when none requires grad."""
    positions = [
        k for k, value in enumerate(values) if isinstance(value, Tensor) and value.requires_grad
    ]
    if not positions:
        return values, None
    tapped = list(values)
    for position, out in zip(
        positions, GradientTap.apply(*[values[k] for k in positions], on_backward=on_backward)
    ):
        tapped[position] = out
    return (tuple(tapped) if type(values) is tuple else type(values)(*tapped)), positions


def _arrays(grads, positions):
    """The gradient arrays a tap passes on, one per tapped position (None stops that gradient)."""
    return [None if grads[position] is None else grads[position]._data for position in positions]
