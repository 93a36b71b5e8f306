"""Module hooks: the register_*_hook methods and the hooked call of nn.Module (ModuleHooks),
hook handles, and the machinery of full backward hooks (Module.register_full_backward_hook).

A module's forward hooks need nothing but a dict; its full backward hooks need two identity
nodes in the graph (GradientTap), one around a call's tensor inputs and one around its
outputs, so that backward tells the hooks the gradients at both ends of the call. A module
without hooks never comes here: Module.__call__ (nn/module.py) runs forward() directly.
"""

import itertools
import warnings

import numpy as np

from minigrad import autograd
from minigrad.errors import DTypeError, ShapeError
from minigrad.engine import Tensor
from minigrad.tensor_api import GradientTap


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


class ModuleHooks:
    """The hook half of nn.Module (Module inherits it): registering forward, forward pre- and full
    backward (pre-)hooks, and the call that runs them. Module.__call__ takes this path only when
    the module has a hook; the hook dicts are made in Module.__init__."""

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) runs before forward; returning something other than None replaces
        args (a tuple, or one value). with_kwargs=True: hook(module, args, kwargs) returns None or
        (args, kwargs). Hooks run in registration order (prepend=True puts this one first)."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) runs after forward; returning something other than None
        replaces the output. with_kwargs=True: hook(module, args, kwargs, output). always_call=True:
        it also runs when forward (or a hook before it) raises, with output None, before the error
        goes on (an error of its own is then only a warning)."""
        return self._add_hook(self._forward_hooks, hook, prepend, with_kwargs, always_call)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) runs when backward has the gradients of a call's outputs:
        grad_output is a tuple with one entry per output (None for one that is not a tensor that
        requires grad); returning a tuple like it replaces them."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) runs once per backward through a call, when the
        gradients of its positional inputs are known. grad_input has one entry per positional
        argument (None for one that is not a tensor; zeros for a tensor that does not require
        grad, as in torch), grad_output one per output; returning a tuple like grad_input replaces
        it. When no input requires grad, the hook runs with the output gradients, grad_input all
        None, and may only return None (torch warns then, and so does minigrad)."""
        return self._add_hook(self._backward_hooks, hook, prepend)

    @staticmethod
    def _add_hook(hooks, hook, prepend, *settings):
        if not callable(hook):
            raise TypeError(f"a hook must be callable; got {type(hook).__name__}")
        handle = RemovableHandle(hooks)
        hooks[handle.id] = (hook, *settings)
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_with_hooks(self, args, kwargs):
        """self(*args, **kwargs) with its hooks, in torch's order: forward pre-hooks (which may
        replace args and kwargs), the backward hooks' tap on the inputs, forward in the module's
        scope, forward hooks (which may replace the output), the tap on the outputs. A forward
        hook with always_call=True also runs when something before it raised."""
        output = None
        called = set()  # the forward hooks that have run: an always_call one runs once

        def run_forward_hook(key, hook, with_kwargs):
            nonlocal output
            called.add(key)
            result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
            if result is not None:
                output = result

        try:
            for hook, with_kwargs in list(self._forward_pre_hooks.values()):
                result = hook(self, args, kwargs) if with_kwargs else hook(self, args)
                if result is None:
                    continue
                if with_kwargs:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"a forward pre-hook with kwargs must return None or (args, kwargs); "
                            f"got {type(result).__name__}"
                        )
                    args, kwargs = result
                else:
                    args = result if isinstance(result, tuple) else (result,)
            backward_hooks = None
            if (self._backward_pre_hooks or self._backward_hooks) and autograd.is_grad_enabled():
                backward_hooks = BackwardHooks(self)
                args = backward_hooks.tap_inputs(args)
            with autograd.module_scope(self):
                output = self.forward(*args, **kwargs)
            for key, (hook, with_kwargs, _) in list(self._forward_hooks.items()):
                run_forward_hook(key, hook, with_kwargs)
            return output if backward_hooks is None else backward_hooks.tap_outputs(output)
        except Exception:
            for key, (hook, with_kwargs, always_call) in list(self._forward_hooks.items()):
                if always_call and key not in called:
                    try:
                        run_forward_hook(key, hook, with_kwargs)
                    except Exception as error:  # the first error is the one to see
                        warnings.warn(
                            f"a forward hook of {type(self).__name__} with always_call=True raised "
                            f"an error, ignored as forward had raised first: {error!r}",
                            stacklevel=3,
                        )
            raise


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
                f"{self.name}'s backward hooks will not run: its output is a "
                f"{type(output).__name__}; they need a Tensor or a tuple of Tensors (as in torch)",
                stacklevel=4,
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
        # no input requires grad, so there is no inputs' tap to call the hooks
        if self.input_positions is None:
            warnings.warn(
                f"a full backward hook of {self.name} runs with the gradients of the outputs only: "
                "no input requires grad in this call, so grad_input is all None (as in torch)",
                stacklevel=2,
            )
            grad_input = (None,) * len(self.args)
            for hook in self.hooks:
                result = hook(self.module, grad_input, grad_output)
                if result is not None and not (
                    isinstance(result, (tuple, list)) and all(g is None for g in result)
                ):
                    raise RuntimeError(
                        f"a backward hook of {self.name} returned gradients, but no input of this "
                        "call requires grad: it may only return None (or Nones)"
                    )
        else:
            self.grad_output = grad_output
        return _arrays(grad_output, self.output_positions)

    def _at_inputs(self, grads):
        if self.grad_output is None:  # the gradient came to the inputs without passing the outputs
            return grads
        grad_input = [None] * len(self.args)
        # torch's zeros for a tensor that does not require grad
        for position, value in enumerate(self.args):
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
                    f"a {kind} of {self.name} must return None or a tuple of {len(expected)} "
                    f"{what}; got {type(result).__name__}"
                )
            if len(result) != len(expected):
                raise RuntimeError(
                    f"a {kind} of {self.name} returned {len(result)} {what}; "
                    f"expected {len(expected)} "
                    f"(one per {'positional argument' if what == 'grad_input' else 'output'})"
                )
            for position, (new, old) in enumerate(zip(result, expected)):
                # None stops a gradient; where there is none, nothing is read
                if new is None or old is None:
                    continue
                if not isinstance(new, Tensor):
                    raise TypeError(
                        f"a {kind} of {self.name} returned a {type(new).__name__} as "
                        f"{what}[{position}]; expected a Tensor or None"
                    )
                if new.shape != old.shape:
                    raise ShapeError(
                        f"a {kind} of {self.name} returned {what}[{position}] of shape "
                        f"{new.shape}; expected shape {old.shape}"
                    )
                if new.dtype != old.dtype:
                    raise DTypeError(
                        f"a {kind} of {self.name} returned {what}[{position}] of dtype "
                        f"{new.dtype}; expected dtype {old.dtype}"
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
