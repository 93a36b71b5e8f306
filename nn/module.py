"""torch.nn.modules.module's Module: how layers hold their weights, buffers and children, and find
each other.

Assigning a Parameter or a Module to an attribute registers it (as in PyTorch), so
`named_parameters()` and `state_dict()` find every weight by its dotted name. A buffer
(`register_buffer`) is state that is not a weight: it is listed by `buffers()`, follows the
module through `to(dtype)`, and is saved in `state_dict()` unless registered with
persistent=False. Calling a module runs forward() in the module's scope (so mg.viz can group
the ops made inside); a module with hooks takes the hooked path, whose registration methods,
call and backward machinery are in nn/hooks.py (ModuleHooks, which Module inherits), and
state_dict / load_state_dict in nn/module_state.py (ModuleState, likewise).
"""

from collections import OrderedDict

import numpy as np

from minigrad import autograd, dtypes
from minigrad.errors import DTypeError
from minigrad.engine import Tensor
from minigrad.ops import check_device
from minigrad.parameter import Parameter

from .hooks import ModuleHooks
from .module_state import ModuleState


def parameter_dtype(dtype=None, device=None, layer=None):
    """The dtype of a new layer's parameters from torch's factory keywords: `dtype` if given,
    else the default float dtype (float32 unless mg.set_default_dtype changed it), as torch
    makes them; `device` must be the CPU (None, "cpu", mg.device("cpu")): another device is
    refused with an error naming it. `layer` (the class's name) starts the messages."""
    check_device(device, layer or "layer")
    dtype = np.dtype(dtypes.get_default_dtype() if dtype is None else dtype)
    if dtype not in (np.float32, np.float64):
        where = f"{layer}: " if layer else ""
        raise DTypeError(f"{where}layer parameters must be float32 or float64; got dtype {dtype}")
    return dtype


class Module(ModuleHooks, ModuleState):
    """Base class of layers and models: subclasses set attributes in __init__, define forward()."""

    def __init__(self):
        for name, value in (
            ("_parameters", OrderedDict()),
            ("_buffers", OrderedDict()),
            ("_non_persistent_buffers", set()),
            ("_modules", OrderedDict()),
            ("_forward_pre_hooks", OrderedDict()),
            ("_forward_hooks", OrderedDict()),
            ("_backward_pre_hooks", OrderedDict()),
            ("_backward_hooks", OrderedDict()),
            ("training", True),
        ):
            object.__setattr__(self, name, value)

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name, value):
        """torch's rules: a Parameter or Module registers (and replaces whatever had the name); a
        name registered as parameter, child or buffer takes only its own kind or None."""
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__}.__init__ must call super().__init__() "
                f"before assigning attribute {name!r}"
            )
        if isinstance(value, Parameter):
            if name not in self._parameters:  # a new name goes last; a replaced one keeps its place
                self._forget(name)
                # refused if a method has the name: the attribute would hide it
                self._check_name("parameter", name, self._parameters)
            self._parameters[name] = value
        elif name in self._parameters:
            self._replace(self._parameters, name, value, Parameter, "parameter")
        elif isinstance(value, Module):
            if name not in self._modules:
                self._forget(name)
            self._modules[name] = value
        elif name in self._modules:
            self._replace(self._modules, name, value, Module, "child module")
        elif name in self._buffers:
            self._replace(self._buffers, name, value, Tensor, "buffer")
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _replace(registry, name, value, kind, what):
        if value is not None and not isinstance(value, kind):
            raise TypeError(
                f"cannot assign {type(value).__name__} as {what} {name!r} "
                f"({kind.__name__} or None expected)"
            )
        registry[name] = value

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._modules, self._buffers):
            registry.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name):  # only called when normal lookup fails
        for registry in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(registry, {})
            if name in entries:
                return entries[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        if name in self._parameters or name in self._modules or name in self._buffers:
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def _check_name(self, kind, name, registry):
        """torch's rules for names given to register_parameter / register_buffer / add_module."""
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__}.__init__ must call super().__init__() "
                f"before registering {kind} {name!r}"
            )
        if not isinstance(name, str):
            raise TypeError(f"{kind} name must be a string; got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f"{kind} name must be a non-empty string without '.'; got {name!r}")
        if hasattr(self, name) and name not in registry:
            raise KeyError(
                f"attribute {name!r} already exists on {type(self).__name__}; "
                f"choose another {kind} name"
            )

    def register_parameter(self, name, parameter):
        """Register a Parameter (or None, for an absent optional weight such as a bias)."""
        self._check_name("parameter", name, self._parameters)
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(
                f"register_parameter: {name!r} must be an nn.Parameter or None; "
                f"got {type(parameter).__name__}"
            )
        self._parameters[name] = parameter

    def register_buffer(self, name, tensor, persistent=True):
        """Register a tensor that is module state but not a weight (no gradient from optimizers);
        persistent buffers are saved in state_dict(). tensor may be None (listed nowhere)."""
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"register_buffer: {name!r} must be a Tensor or None; got {type(tensor).__name__}"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name, module):
        """Register a child module (or None) under `name`."""
        self._check_name("module", name, self._modules)
        if module is not None and not isinstance(module, Module):
            raise TypeError(
                f"add_module: {name!r} must be an nn.Module or None; got {type(module).__name__}"
            )
        self._modules[name] = module

    register_module = add_module

    # -- traversal ----------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every descendant, depth first; a module reached
        by two paths comes once (unless remove_duplicate=False)."""
        seen = set() if memo is None else memo  # modules already listed
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if module in seen:
                    continue
                seen.add(module)
            yield name, module
            children = [
                (f"{name}.{child_name}" if name else child_name, child)
                for child_name, child in module._modules.items()
                if child is not None
            ]
            stack.extend(reversed(children))

    def modules(self):
        return (module for _, module in self.named_modules())

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        return (child for _, child in self.named_children())

    def _named_members(self, registry, prefix, recurse, remove_duplicate):
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        seen = set()
        for module_name, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_name}.{name}" if module_name else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) for every parameter, each once, in registration order."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        return (parameter for _, parameter in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Tensor) for every buffer (persistent or not), each once."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        return (buffer for _, buffer in self.named_buffers(recurse=recurse))

    def get_submodule(self, target):
        """The module at dotted path `target` ('' is this one): model.get_submodule('encoder.0')."""
        module = self
        for item in target.split(".") if target else ():
            if module._modules.get(item) is None:
                raise AttributeError(
                    f"{type(module).__name__} has no submodule {item!r} (looking up {target!r})"
                )
            module = module._modules[item]
        return module

    def get_parameter(self, target):
        """The Parameter at dotted path `target`: model.get_parameter('encoder.0.weight')."""
        return self._get_member(target, "_parameters", "parameter")

    def get_buffer(self, target):
        """The buffer at dotted path `target`."""
        return self._get_member(target, "_buffers", "buffer")

    def _get_member(self, target, registry, kind):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if getattr(module, registry).get(name) is None:
            raise AttributeError(
                f"{type(module).__name__} has no {kind} {name!r} (looking up {target!r})"
            )
        return getattr(module, registry)[name]

    # -- modes, gradients, dtypes --------------------------------------------------------------
    def train(self, mode=True):
        """Training mode (dropout on) for this module and every descendant; returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode must be a bool; got {mode!r}")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Switch gradient tracking of every parameter (False freezes the module); returns self."""
        for parameter in self.parameters():
            parameter.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient (set_to_none=False: fill it with zeros in place)."""
        for parameter in self.parameters():
            if parameter.grad is None:
                continue
            if set_to_none:
                parameter.grad = None
            else:
                with autograd.no_grad():
                    parameter.grad.zero_()

    def apply(self, fn):
        """Call fn(module) on every descendant, children before parents, then on self; returns
        self (e.g. model.apply(init_weights))."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Cast every float parameter and buffer to a float dtype, in place: to(mg.float64),
        to(dtype=...), to(tensor) (its dtype). A device argument may only be 'cpu'. Parameters stay
        the same objects (optimizers keep them); integer buffers are left alone. Returns self."""
        dtype = _target_dtype(args, kwargs)
        if dtype is None:
            return self
        for module in self.modules():
            for parameter in module._parameters.values():
                if (
                    parameter is not None
                    and parameter.dtype.kind == "f"
                    and parameter.dtype != dtype
                ):
                    parameter.data = parameter._data.astype(dtype)
                    if parameter.grad is not None:
                        parameter.grad = Tensor._wrap(parameter.grad._data.astype(dtype))
            for name, buffer in module._buffers.items():
                if buffer is not None and buffer.dtype.kind == "f" and buffer.dtype != dtype:
                    module._buffers[name] = buffer.to(dtype)
        return self

    def float(self):
        return self.to(dtypes.float32)

    def double(self):
        return self.to(dtypes.float64)

    def cpu(self):
        return self

    def cuda(self, device=None):
        """Refused: minigrad has no CUDA device (the error names the one asked for)."""
        asked = (
            "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device
        )
        raise ValueError(f"minigrad runs on the CPU only; got device {str(asked)!r}")

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        forward_hooks = self._forward_pre_hooks or self._forward_hooks
        if forward_hooks or self._backward_pre_hooks or self._backward_hooks:
            return self._call_with_hooks(args, kwargs)  # nn/hooks.py
        with autograd.module_scope(self):  # mg.viz groups the ops made inside by module
            return self.forward(*args, **kwargs)

    # -- printing -----------------------------------------------------------------------------
    def extra_repr(self):
        """One line of settings shown in repr(), e.g. 'in_features=3, out_features=2'."""
        return ""

    def __repr__(self):
        """As torch prints a module: a one-line extra_repr inside the parentheses; otherwise its
        lines, then one line per child, each indented by two spaces."""
        return _module_repr(
            self, [(f"({name})", repr(child)) for name, child in self._modules.items()]
        )


def _module_repr(module, children):
    """Module(...) text of `module` with the (label, text) pairs as its child lines."""
    extra = module.extra_repr()
    extra_lines = extra.split("\n") if extra else []
    lines = extra_lines + [f"{label}: " + text.replace("\n", "\n  ") for label, text in children]
    if not lines:
        return f"{type(module).__name__}()"
    if len(extra_lines) == 1 and not children:
        return f"{type(module).__name__}({extra})"
    return f"{type(module).__name__}(\n" + "".join(f"  {line}\n" for line in lines) + ")"


def _target_dtype(args, kwargs):
    """The float dtype asked of Module.to(...), or None (only a device was given)."""
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            dtype = arg.dtype
        elif str(arg).split(":")[0] in ("cpu", "cuda", "mps", "meta"):  # a string or mg.device
            device = arg
        else:
            dtype = arg
    if device is not None and str(device).split(":")[0] != "cpu":
        raise ValueError(f"minigrad runs on the CPU only; got device {str(device)!r}")
    if dtype is None:
        return None
    dtype = dtypes.as_dtype(dtype)
    if dtype.kind != "f":
        raise DTypeError(f"nn.Module.to only accepts float dtypes (float32, float64); got {dtype}")
    return dtype
